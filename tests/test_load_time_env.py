"""mpslint.analysis.load_time_env: which MPS variables a script sets, where, and whether torch is imported yet."""

from __future__ import annotations

import ast
import textwrap

from mpslint.analysis import load_time_env as env


def report(source: str) -> env.EnvReport:
    return env.assignments(ast.parse(textwrap.dedent(source)))


def test_every_write_form_with_line_and_order_against_the_first_torch_import():
    r = report("""
        import os
        from os import environ as E, putenv
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
        os.environ.setdefault("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.0")
        putenv("PYTORCH_MPS_FAST_MATH", "1")
        E.update({"PYTORCH_MPS_LOW_WATERMARK_RATIO": "0.5"}, PYTORCH_DEBUG_MPS_ALLOCATOR="1")
        import numpy
        from torch import nn
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"
        del os.environ["PYTORCH_MPS_FAST_MATH"]
        os.unsetenv("HOME")
    """)
    assert r.torch_import_line == 9
    got = [(w.name, w.how, w.value, w.line, w.before_torch_import) for w in r.writes]
    assert got == [
        ("PYTORCH_ENABLE_MPS_FALLBACK", env.ASSIGN, "1", 4, True),
        ("PYTORCH_MPS_HIGH_WATERMARK_RATIO", env.SETDEFAULT, "0.0", 5, True),
        ("PYTORCH_MPS_FAST_MATH", env.PUTENV, "1", 6, True),
        ("PYTORCH_MPS_LOW_WATERMARK_RATIO", env.ASSIGN, "0.5", 7, True),
        ("PYTORCH_DEBUG_MPS_ALLOCATOR", env.ASSIGN, "1", 7, True),
        ("PYTORCH_ENABLE_MPS_FALLBACK", env.ASSIGN, "0", 10, False),
        ("PYTORCH_MPS_FAST_MATH", env.UNSET, None, 11, False),
        ("HOME", env.UNSET, None, 12, False),
    ]
    assert [w.name for w in r.load_time()] == [w[0] for w in got[:7]]


def test_blocks_that_run_with_the_module_count_and_function_bodies_do_not():
    r = report("""
        import os
        def configure():
            os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
        if __name__ == "__main__":
            try:
                os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
            except KeyError:
                pass
            import torchvision
            os.environ |= {"PYTORCH_MPS_PREFER_METAL": "1"}
    """)
    assert r.torch_import_line == 10  # torchvision imports torch
    assert [(w.line, w.before_torch_import) for w in r.writes] == [(7, True), (11, False)]


def test_dynamic_imports_and_values_not_known_statically():
    r = report("""
        import os, importlib
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = str(int(True))
        torch = importlib.import_module("torch")
    """)
    assert r.torch_import_line == 4
    (write,) = r.writes
    assert write.value is None and write.before_torch_import


def test_other_modules_named_os_or_environ_are_not_the_environment():
    r = report("""
        environ = {}
        environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
        import os.path
        config = {"os": 1}
        config["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
    """)
    assert r.writes == () and r.torch_import_line is None


def test_effective_value_follows_pythons_semantics_before_the_import_only():
    r = report("""
        import os
        os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")
        import torch
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"
    """)
    value, write = env.effective_value(r, "PYTORCH_ENABLE_MPS_FALLBACK", None)
    assert (value, write.line) == ("1", 3)
    # setdefault does nothing when the variable is already in the environment
    assert env.effective_value(r, "PYTORCH_ENABLE_MPS_FALLBACK", "0") == ("0", None)


def test_the_variable_list_names_the_fallback_switch_as_read_at_import():
    assert env.MPS_VARIABLES["PYTORCH_ENABLE_MPS_FALLBACK"].read == env.IMPORT
    assert env.MPS_VARIABLES["PYTORCH_MPS_HIGH_WATERMARK_RATIO"].read == env.FIRST_USE
    assert all(v.source.startswith("https://github.com/pytorch/pytorch/") for v in env.MPS_VARIABLES.values())


def test_function_writes_run_after_the_import_when_the_def_follows_it():
    module = ast.parse(textwrap.dedent("""
        import os
        import torch

        def main():
            os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
            def inner():
                from os import environ
                environ.setdefault("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.0")

        class Setup:
            def apply(self):
                os.putenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
                handler = lambda: os.environ.update(PYTORCH_MPS_FAST_MATH="1")
    """))
    got = [(w.name, w.how, w.line, w.before_torch_import) for w in env.function_writes(module)]
    assert got == [
        ("PYTORCH_ENABLE_MPS_FALLBACK", env.ASSIGN, 6, False),
        ("PYTORCH_MPS_HIGH_WATERMARK_RATIO", env.SETDEFAULT, 9, False),
        ("PYTORCH_ENABLE_MPS_FALLBACK", env.PUTENV, 13, False),
    ]
    assert env.assignments(module).writes == ()  # the top level writes nothing


def test_a_function_defined_before_the_import_may_run_before_it():
    module = ast.parse(textwrap.dedent("""
        import os

        def setup():
            os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"

        setup()
        import torch
    """))
    assert [(w.line, w.before_torch_import) for w in env.function_writes(module)] == [(5, True)]
