"""RegistrySnapshot covers the registries plugins keep themselves (register_registry)."""

import pytest
from irpass.plugins import register_registry
from irpass.testing.plugins import RegistrySnapshot, isolated_plugins
from irpass_std.layout import list_alter_layouts, register_alter_layout


def _keep(call, arg_types):
    return None


def test_an_alter_layout_hook_registered_inside_a_snapshot_is_gone_after_restore():
    assert "nn.conv2d" not in list_alter_layouts()
    saved = RegistrySnapshot.take()
    register_alter_layout("nn.conv2d", _keep)
    assert list_alter_layouts() == ["nn.conv2d"]
    saved.restore()
    assert list_alter_layouts() == []


def test_a_hook_registered_before_the_snapshot_is_put_back():
    register_alter_layout("nn.conv2d", _keep)
    saved = RegistrySnapshot.take()
    register_alter_layout("nn.conv2d", lambda call, types: None, override=True)
    register_alter_layout("nn.max_pool2d", _keep)
    saved.restore()
    from irpass_std import layout

    assert layout._ALTER_HOOKS == {"nn.conv2d": _keep}


def test_isolated_plugins_keeps_module_registries_and_restores_them():
    register_alter_layout("nn.conv2d", _keep)
    with isolated_plugins():
        assert list_alter_layouts() == ["nn.conv2d"]
        register_alter_layout("nn.max_pool2d", _keep)
    assert list_alter_layouts() == ["nn.conv2d"]


def test_registries_registered_later_go_back_to_their_first_contents():
    saved = RegistrySnapshot.take()
    hooks = register_registry({"a": 1})
    items = register_registry([1])
    assert register_registry(hooks) is hooks  # once only
    hooks["b"] = 2
    items.append(2)
    saved.restore()
    assert hooks == {"a": 1} and items == [1]
    hooks["c"] = 3
    RegistrySnapshot.take().restore()  # a snapshot taken now keeps "c"
    assert hooks == {"a": 1, "c": 3}


def test_register_registry_takes_dicts_and_lists_only():
    with pytest.raises(TypeError, match="dict or a list"):
        register_registry((1, 2))
