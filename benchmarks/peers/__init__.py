"""The systems bench_peers.py times, one module each.

Each module has ``NAME`` (the column title), ``DIST`` (the distribution whose
version the table shows), ``build(workload, n)`` (the workload in that system's
own idiom), ``run(workload, graph)`` (the workload's pass on it; the timed part,
returning what the pass left), ``counts(workload, graph)`` (the op counts the
verification reads) and ``w4(n_passes, instrumented)`` (a callable running a
pipeline of ``n_passes`` trivial passes once, or ``None`` when the system has no
such instrument). Importing a module imports its system: a peer that is not
installed raises ImportError there.
"""
