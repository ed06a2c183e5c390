"""irpass's standard pass pack, the plugin ``std``.

It ships with irpass and is registered through irpass's own entry points
(``std = "irpass_std.plugin"``), exactly like a third party's pack: blocking it
(``-p no:std``, ``[plugins] disable = ["std"]``) removes its passes and its
part of the default pipeline. Names, signatures and opt levels follow TVM
Relay's.
"""
