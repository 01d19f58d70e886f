# Runs one model-written Python answer against the tests of an LiC code
# instance. The Go grader (stages/lic/grade) starts it in a throw-away
# directory with a clean environment; it reads one JSON spec on stdin and
# writes one result line, led by the nonce the spec carries, to the stdout
# it was started with. Everything the candidate prints goes to /dev/null.
#
# This file is ours; it is not derived from LiC's or HumanEval's harness,
# though it follows LiC's grading rules (see the Go package documentation).

import ast
import base64
import decimal
import io
import json
import os
import pickle
import resource
import signal
import sys
import traceback
import zlib

# Imports given to every answer, as LiC's harness also does: models often
# use these modules without importing them. No star import here shadows a
# builtin.
PRELUDE = """\
import math, re, string, collections, itertools, functools, heapq, bisect, operator, typing
from typing import *
from collections import *
from itertools import *
from functools import *
from heapq import *
from bisect import *
"""


class TestTimeout(BaseException):
    """Raised by the alarm; a BaseException so `except Exception` in the
    candidate cannot swallow it."""


def _alarm(signum, frame):
    raise TestTimeout()


def set_limits(spec):
    def cap(res, val):
        try:
            soft, hard = resource.getrlimit(res)
            if hard != resource.RLIM_INFINITY and hard < val:
                val = hard
            resource.setrlimit(res, (val, val))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, spec["memory"])
    cap(resource.RLIMIT_CPU, spec["cpu_seconds"])
    cap(resource.RLIMIT_FSIZE, 16 << 20)
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_NOFILE, 64)
    if os.getuid() != 0:
        # No new processes or threads. Root ignores this limit, which is why
        # the Go side never runs this script as root.
        cap(resource.RLIMIT_NPROC, 0)


def block_network():
    # The weaker fallback when no network namespace could be made: Python's
    # socket entry points refuse to work. Code using ctypes or a module
    # that kept its own reference to the socket type gets past this.
    import socket
    import _socket

    def refuse(*args, **kwargs):
        raise OSError("network access is disabled while grading")

    class NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            refuse()

    socket.socket = NoSocket
    _socket.socket = NoSocket
    for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname",
                 "gethostbyname_ex", "gethostbyaddr", "socketpair", "fromfd"):
        if hasattr(socket, name):
            setattr(socket, name, refuse)


def short(value, limit=200):
    try:
        text = repr(value)
    except BaseException:
        text = "<unprintable>"
    return text if len(text) <= limit else text[:limit] + "..."


def describe(exc):
    if isinstance(exc, TestTimeout):
        return "it ran out of time"
    if isinstance(exc, MemoryError):
        return "it ran out of memory"
    if isinstance(exc, SystemExit):
        return "it called exit()"
    msg = str(exc)
    return type(exc).__name__ + (": " + short(msg, 300) if msg else "")


def prompt_imports(prompt):
    try:
        tree = ast.parse(prompt or "")
    except SyntaxError:
        return ""
    lines = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(lines) + ("\n" if lines else "")


def load_cases(spec):
    cases = []
    raw = spec.get("cases")
    if raw:
        parsed = json.loads(raw)
        if isinstance(parsed, dict):
            parsed = [parsed]
        cases.extend(parsed)
    private = spec.get("private")
    if private:
        try:
            parsed = json.loads(private)
        except ValueError:
            # LiveCodeBench ships private cases as base64 of zlib of a
            # pickled JSON string.
            parsed = json.loads(pickle.loads(zlib.decompress(base64.b64decode(private.encode()))))
        cases.extend(parsed)
    for c in cases:
        if not isinstance(c, dict) or "input" not in c or "output" not in c:
            raise ValueError("a test case lacks input or output")
    return cases


def same_stdout(got, want):
    # Line by line, surrounding space ignored; lines of numbers compare as
    # numbers. LiveCodeBench's rule, which LiC uses.
    g = [l.strip() for l in got.strip().split("\n")]
    w = [l.strip() for l in want.strip().split("\n")]
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        try:
            if [decimal.Decimal(x) for x in a.split()] != [decimal.Decimal(x) for x in b.split()]:
                return False
        except (decimal.InvalidOperation, ValueError):
            return False
    return True


def main():
    spec = json.loads(sys.stdin.read())
    nonce = spec["nonce"]
    out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    sys.stdin = io.StringIO("")
    notes = []

    def report(status, reason):
        out.write(nonce + json.dumps({"status": status, "reason": reason, "notes": notes}) + "\n")
        out.flush()
        os._exit(0)

    set_limits(spec)
    if spec.get("block_network"):
        block_network()
    sys.setrecursionlimit(10000)
    signal.signal(signal.SIGALRM, _alarm)
    per_test = max(1, int(spec.get("per_test_seconds", 10)))

    code = spec["code"]
    func_name = spec.get("func_name") or ""
    mode = spec.get("tests") or "all"
    try:
        cases = load_cases(spec)
    except Exception as exc:
        report("bad_instance", "the test cases cannot be read: " + describe(exc))
    check_src = spec.get("check") or ""
    run_cases = bool(cases) and (mode in ("all", "cases") or not check_src)
    run_check = bool(check_src) and (mode in ("all", "check") or not cases)
    if not run_cases and not run_check:
        report("bad_instance", "the instance has no tests")
    functional = [c for c in cases if c.get("testtype", "functional") != "stdin"]
    if run_cases and functional and not func_name:
        report("bad_instance", "the instance has functional tests but no function name")

    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        report("fail", "the code does not parse: %s (line %s)" % (exc.msg, exc.lineno))

    # Keep the definitions: imports, functions, classes and assignments.
    # Example calls, prints, loops and `if __name__ == "__main__":` blocks
    # are left out, so that only the answer's function is graded.
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                                    ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                                                    ast.AnnAssign))]
    if len(keep) < len(tree.body):
        notes.append("left out %d top-level statement(s) that are not definitions" % (len(tree.body) - len(keep)))
    module = ast.Module(body=keep, type_ignores=[])
    prelude = PRELUDE + prompt_imports(spec.get("prompt"))

    def load(run_main, source_tree):
        ns = {"__name__": "__main__" if run_main else "candidate", "__builtins__": __builtins__}
        exec(compile(prelude, "<prelude>", "exec"), ns)
        exec(compile(source_tree, "<answer>", "exec"), ns)
        return ns

    fn = None
    if functional or run_check:
        signal.alarm(per_test)
        try:
            ns = load(False, module)
        except BaseException as exc:
            signal.alarm(0)
            report("fail", "loading the code failed: " + describe(exc))
        signal.alarm(0)
        fn = ns.get(func_name) if func_name else None
        if not callable(fn) and callable(ns.get("Solution")):
            try:
                fn = getattr(ns["Solution"](), func_name, None)
            except BaseException:
                fn = None
        if not callable(fn):
            defs = [n.name for n in keep if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if not defs:
                report("fail", "the code defines no function")
            fn = ns[defs[-1]]
            if func_name:
                notes.append("no function named %s; graded the last function, %s" % (func_name, defs[-1]))
                ns[func_name] = fn

    passed = []
    if run_cases:
        for k, case in enumerate(cases, 1):
            if case.get("testtype", "functional") == "stdin":
                buf = io.StringIO()
                signal.alarm(per_test)
                try:
                    sys.stdin, sys.stdout = io.StringIO(case["input"]), buf
                    load(True, tree)
                except BaseException as exc:
                    signal.alarm(0)
                    sys.stdout = sys.__stdout__
                    report("fail", "test case %d: %s" % (k, describe(exc)))
                finally:
                    signal.alarm(0)
                    sys.stdin, sys.stdout = io.StringIO(""), sys.__stdout__
                if not same_stdout(buf.getvalue(), case["output"]):
                    report("fail", "test case %d: printed %s, expected %s" % (k, short(buf.getvalue()), short(case["output"])))
                continue
            try:
                args = [json.loads(line) for line in case["input"].split("\n")]
                want = json.loads(case["output"])
            except ValueError as exc:
                report("bad_instance", "test case %d is not JSON: %s" % (k, exc))
            signal.alarm(per_test)
            try:
                got = fn(*args)
            except BaseException as exc:
                signal.alarm(0)
                report("fail", "test case %d: %s" % (k, describe(exc)))
            signal.alarm(0)
            if isinstance(got, tuple):
                got = list(got)
            try:
                ok = got == want
            except BaseException:
                ok = False
            if not ok:
                report("fail", "test case %d: returned %s, expected %s" % (k, short(got), short(want)))
        passed.append("%d test case(s)" % len(cases))
    if run_check:
        check_ns = {"__name__": "check", "__builtins__": __builtins__}
        signal.alarm(per_test)
        try:
            exec(compile(prelude, "<prelude>", "exec"), check_ns)
            exec(compile(check_src, "<check>", "exec"), check_ns)
            check_ns["check"](fn)
        except BaseException as exc:
            signal.alarm(0)
            where = ""
            for frame in reversed(traceback.extract_tb(exc.__traceback__)):
                if frame.filename == "<check>":
                    line = check_src.split("\n")[frame.lineno - 1].strip() if frame.lineno else ""
                    where = " at `%s`" % line[:160]
                    break
            if isinstance(exc, AssertionError):
                report("fail", "check(candidate) failed" + where)
            report("fail", "check(candidate) failed" + where + ": " + describe(exc))
        signal.alarm(0)
        passed.append("check(candidate)")
    report("pass", "passed " + " and ".join(passed))


if __name__ == "__main__":
    main()
