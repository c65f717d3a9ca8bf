#!/usr/bin/env python3
"""Dump what NVIDIA's cuda.bindings takes and returns for every function of the driver,
NVRTC and nvJitLink modules, as JSON: {module: {name: {"params": [...], "returns": [...]}}}.

Run where cuda.bindings is installed (the GPU machine): the output is the reference that
tests/generator's "at least as typed as cuda.bindings" check reads. Parameters come from
the function's signature, results from the numpydoc "Returns" section of its docstring.
"""
import inspect
import json
import re
import sys


def returns_of(doc):
    """Return the names/types listed under 'Returns' (first line of each entry)."""
    if not doc:
        return []
    lines = doc.splitlines()
    out, inside = [], False
    for i, line in enumerate(lines):
        s = line.strip()
        if s == "Returns" and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            inside = True
            continue
        if inside:
            if set(s) == {"-"} and s:
                continue
            if s in ("See Also", "Notes", "Examples", "Parameters", "Raises") or (
                i + 1 < len(lines) and lines[i + 1].strip() and set(lines[i + 1].strip()) == {"-"}
                and s and not line.startswith(" ")):
                break
            if s and not line.startswith("        ") and not line.startswith("\t\t"):
                out.append(s)
    return out


def params_of(fn):
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        doc = fn.__doc__ or ""
        m = re.match(r"\w+\((.*?)\)", doc)
        return [p.strip().split(" ")[-1].split(":")[0] for p in m.group(1).split(",")] if m and m.group(1) else []


def main():
    result = {}
    for module_name in ("driver", "nvrtc", "nvjitlink"):
        try:
            module = __import__("cuda.bindings." + module_name, fromlist=["x"])
        except ImportError as e:
            result[module_name] = {"error": str(e)}
            continue
        entries = {}
        for name in sorted(dir(module)):
            if not re.match(r"^(cu|nvrtc|nvJitLink)[A-Z]", name):
                continue
            fn = getattr(module, name)
            if not callable(fn) or inspect.isclass(fn):
                continue
            entries[name] = {"params": params_of(fn), "returns": returns_of(fn.__doc__)}
        result[module_name] = entries
    try:
        import cuda.bindings
        result["version"] = cuda.bindings.__version__
    except Exception:  # noqa: BLE001 - version is informative only
        pass
    json.dump(result, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
