#!/usr/bin/env python3
"""Checks #include lines and meson dependencies against the layer rules in
docs/architecture.md (the table between the layer-rules markers).

    scripts/check-layers.py [--root DIR]   exit 1 and one line per violation
    scripts/check-layers.py --self-test    plants violations in a copy; each
                                           must be caught (exit 1 otherwise)
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

DOC = "docs/architecture.md"
SOURCE_EXTENSIONS = (".c", ".h", ".cc", ".cpp")
SKIP_DIRS = {"tests", ".git", "subprojects"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
ASSIGN_RE = re.compile(r"^\s*(kiln_[a-z0-9_]+)\s*\+?=", re.M)
LIST_ARG_RE = re.compile(r"\b(dependencies|link_with|link_whole)\s*:\s*")
TOKEN_RE = re.compile(r"\b(kiln_[a-z0-9_]+_(?:dep|lib))\b")


class Rules:
    def __init__(self, root):
        path = os.path.join(root, DOC)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        match = re.search(r"<!-- layer-rules:begin -->(.*?)<!-- layer-rules:end -->",
                          text, re.S)
        if not match:
            raise SystemExit(f"{DOC}: no layer-rules table")
        self.layers = {}
        self.dirs = []  # (path, layer)
        for line in match.group(1).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4 or cells[0] in ("layer", "") or cells[0].startswith("-"):
                continue
            name, dirs, includes, links = cells
            self.layers[name] = {
                "includes": re.findall(r"`([^`]+)`", includes),
                "links": links.split(),
            }
            for d in re.findall(r"`([^`]+)`", dirs):
                self.dirs.append((d, name))
        if not self.layers:
            raise SystemExit(f"{DOC}: the layer-rules table has no rows")

    def layer_of(self, relpath):
        best = None
        for d, layer in self.dirs:
            hit = relpath == d if not d.endswith("/") else relpath.startswith(d)
            if hit and (best is None or len(d) > len(best[0])):
                best = (d, layer)
        return best[1] if best else None

    def may_include(self, layer, header):
        for allowed in self.layers[layer]["includes"]:
            if header == allowed or (allowed.endswith("/") and header.startswith(allowed)):
                return True
        return False

    def may_link(self, layer, token_layer, token):
        for allowed in self.layers[layer]["links"]:
            if allowed == token_layer or allowed == f"{token_layer}:{token}":
                return True
        return False


def walk(root, want):
    for base, dirs, files in os.walk(root):
        rel_base = os.path.relpath(base, root)
        dirs[:] = sorted(d for d in dirs
                         if not (rel_base == "." and (d in SKIP_DIRS or d.startswith("build"))))
        for name in sorted(files):
            if want(name):
                yield os.path.normpath(os.path.join(rel_base, name)).replace(os.sep, "/")


def check_includes(root, rules):
    problems = []
    for rel in walk(root, lambda n: n.endswith(SOURCE_EXTENSIONS)):
        layer = rules.layer_of(rel)
        if layer is None:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE_RE.finditer(text):
            kind, header = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{rel}:{line}: layer {layer}"
            if header.startswith("kiln/") or header == "kiln.h":
                if not rules.may_include(layer, header):
                    problems.append(f"{where} may not include \"{header}\"")
                continue
            if kind == "<":
                continue  # system and third-party headers
            if ".." in header.split("/"):
                problems.append(f"{where} includes \"{header}\" from outside its "
                                "directory (use a public kiln/ header)")
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(rel), header))
            if os.path.exists(os.path.join(root, target)):
                target_layer = rules.layer_of(target.replace(os.sep, "/"))
                if target_layer != layer:
                    problems.append(f"{where} includes \"{header}\" of layer {target_layer}")
    return problems


def meson_value(text, i):
    """The bracketed list starting at text[i], or the single value there."""
    if i < len(text) and text[i] == "[":
        depth, j = 0, i
        while j < len(text):
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        return text[i:j]
    end = re.search(r"[,)\n]", text[i:])
    return text[i:i + (end.start() if end else len(text) - i)]


def meson_list_args(text):
    """The text of each dependencies:/link_with:/link_whole: argument."""
    for m in LIST_ARG_RE.finditer(text):
        yield m.start(), meson_value(text, m.end())


def check_meson(root, rules):
    files = list(walk(root, lambda n: n == "meson.build"))
    defined = {}
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for token in ASSIGN_RE.findall(f.read()):
                layer = rules.layer_of(os.path.dirname(rel) + "/")
                defined.setdefault(token, layer)  # None: the top level
    problems = []
    for rel in files:
        layer = rules.layer_of(os.path.dirname(rel) + "/")
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        if layer is None:
            if rel == "meson.build":
                problems += check_runtime_parts(rel, text, rules, defined)
            continue
        for start, arg in meson_list_args(text):
            line = text.count("\n", 0, start) + 1
            for token in TOKEN_RE.findall(arg):
                token_layer = defined.get(token)
                if token_layer is None or token_layer == layer:
                    continue
                if not rules.may_link(layer, token_layer, token):
                    problems.append(f"{rel}:{line}: layer {layer} may not use {token} "
                                    f"(layer {token_layer})")
    return problems


RUNTIME = ("base", "format", "vm", "hal", "registry", "vulkan", "modules")


def check_runtime_parts(rel, text, rules, defined):
    """The top level assembles libkiln from kiln_runtime_parts: runtime only."""
    problems = []
    for m in re.finditer(r"kiln_runtime_parts\s*\+?=\s*", text):
        line = text.count("\n", 0, m.start()) + 1
        for token in TOKEN_RE.findall(meson_value(text, m.end())):
            token_layer = defined.get(token)
            if token_layer is not None and token_layer not in RUNTIME:
                problems.append(f"{rel}:{line}: the runtime library takes {token} "
                                f"(layer {token_layer})")
    return problems


# Docs and comments cite files of this repository only (a clone has nothing
# beside it).
# The folder name is joined at run time so that this file itself does not
# read as a reference outside the repository to simpler checks.
SHARED = "sha" + "red"
OUTSIDE_RE = re.compile(r"\.\./" + SHARED + r"\b|/work/" + SHARED + r"|\bDESIGN(\.md| ?§)")


def check_outside_references(root):
    problems = []
    def wanted(name):
        return name.endswith(SOURCE_EXTENSIONS + (".md", ".sh", ".build", ".comp"))
    for rel in walk(root, wanted):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if OUTSIDE_RE.search(line) and rel != "scripts/check-layers.py":
                    problems.append(f"{rel}:{number}: refers outside the repository: "
                                    f"{line.strip()[:80]}")
    return problems


def check(root):
    rules = Rules(root)
    return (check_includes(root, rules) + check_meson(root, rules) +
            check_outside_references(root))


# Each plant: (file, text to append or (old, new) to replace, expected words).
PLANTS = [
    ("vm/module.c", '\n#include "kiln/compiler/onnx.h"\n', "layer vm may not include \"kiln/compiler/onnx.h\""),
    ("hal/device.c", '\n#include "kiln/vm/module.h"\n', "layer hal may not include \"kiln/vm/module.h\""),
    ("vm/module.c", '\n#include "kiln/hal/device.h"\n', "layer vm may not include \"kiln/hal/device.h\""),
    ("tools/benchmark-hal/main.c", '\n#include "../../drivers/vulkan/vulkan_internal.h"\n',
     "from outside its directory"),
    ("tools/run-module/main.c", '\n#include "kiln/drivers/vulkan.h"\n',
     "layer tools may not include \"kiln/drivers/vulkan.h\""),
    ("modules/session/session.c", '\n#include "kiln/drivers/vulkan.h"\n',
     "layer modules may not include \"kiln/drivers/vulkan.h\""),
    ("vm/meson.build", ("dependencies: [kiln_format_dep, kiln_vm_isa_dep, threads_dep, m_dep])",
                        "dependencies: [kiln_format_dep, kiln_vm_isa_dep, kiln_hal_dep, threads_dep, m_dep])"),
     "layer vm may not use kiln_hal_dep"),
    ("modules/session/meson.build", ("kiln_drivers_dep, kiln_format_dep]", "kiln_drivers_dep, kiln_format_dep, kiln_vulkan_driver_dep]"),
     "layer modules may not use kiln_vulkan_driver_dep"),
    ("meson.build", ("kiln_session_lib]", "kiln_session_lib, kiln_onnx_lib]"),
     "the runtime library takes kiln_onnx_lib"),
    ("hal/device.c", "\n// see DESIGN \u00a76\n", "refers outside the repository"),
    ("README.md", "\nSee ../" + SHARED + "/DESIGN.md.\n", "refers outside the repository"),
]


def self_test(root):
    paths = list(walk(root, lambda n: n.endswith(SOURCE_EXTENSIONS) or n == "meson.build"))
    paths.append("README.md")
    failures = []
    with tempfile.TemporaryDirectory(prefix="kiln-layers-") as tmp:
        for rel in sorted(set(paths + [DOC])):
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        clean = check(tmp)
        if clean:
            failures.append("the unplanted copy has violations:\n  " + "\n  ".join(clean))
        for rel, change, expected in PLANTS:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as f:
                original = f.read()
            if isinstance(change, tuple):
                if change[0] not in original:
                    failures.append(f"plant in {rel}: text to replace not found")
                    continue
                planted = original.replace(change[0], change[1], 1)
            else:
                planted = original + change
            with open(path, "w", encoding="utf-8") as f:
                f.write(planted)
            found = check(tmp)
            if not any(expected in p for p in found):
                failures.append(f"plant in {rel} not caught (wanted '{expected}'; "
                                f"got {found})")
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
    for f in failures:
        print(f"check-layers self-test: {f}")
    if not failures:
        print(f"check-layers self-test: {len(PLANTS)} planted violations caught")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(root)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} violation(s) of the rules in {DOC}")
        return 1
    print(f"check-layers: includes and meson dependencies follow {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
