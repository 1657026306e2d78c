#!/usr/bin/python3
"""What the README says scripts/compile_gpu.sh compiles is what the script compiles.

From the script: the backends it accepts (the branches of its `case "$b" in`), the ones it runs
by default (`backends=(...)`), and each backend's architectures (cuda: CMAKE_CUDA_ARCHITECTURES,
hip: CMAKE_HIP_ARCHITECTURES, hip-mi: its --offload-arch flags).
From the README:
  - the usage `scripts/compile_gpu.sh [a] [b] ...` names every backend the script accepts;
  - the list of the check (lines `- `BACKEND`: ...`, each with its continuation lines) has one
    item per backend, naming exactly the script's architectures of it (sm_NN, gfxNNN);
  - the paragraph of "What runs where" that starts "CI (`scripts/test.sh`) also compiles" names
    every architecture the script compiles and no other;
  - no line says that an architecture the script compiles is "not compile-checked".
Exit 1 naming each disagreement.

Usage: compile_targets_test.py [--repo DIR] [--self-test]
  --self-test  breaks a copy of the README in known ways and expects each to be rejected.
"""

import argparse
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCH = re.compile(r"\b(sm_\d+|gfx[0-9a-f]+)\b")
USAGE = re.compile(r"scripts/compile_gpu\.sh((?:\s+\[[\w-]+\])+)")
ITEM = re.compile(r"^- `([\w-]+)`:")
CI_PARAGRAPH = "CI (`scripts/test.sh`) also compiles"


def script_facts(text):
    """(accepted backends, default backends, {backend: set of architectures})."""
    case = re.search(r'case "\$b" in(.*?)esac', text, re.S)
    accepted = re.findall(r"^\s*([\w-]+)\)", case.group(1), re.M) if case else []
    default = re.search(r"backends=\(([^)$]*)\)", text)
    cuda = re.search(r'CMAKE_CUDA_ARCHITECTURES="([^"]+)"', text)
    hip = re.search(r"CMAKE_HIP_ARCHITECTURES=([\w;]+)", text)
    archs = {
        "cuda": {f"sm_{a}" for a in cuda.group(1).split(";")} if cuda else set(),
        "hip": set(hip.group(1).split(";")) if hip else set(),
        "hip-mi": set(re.findall(r"--offload-arch=(\w+)", text)),
    }
    return set(accepted), set(default.group(1).split()) if default else set(), archs


def items(lines):
    """{backend: (line number, text of the item with its continuation lines)}."""
    found, current = {}, None
    for number, line in enumerate(lines, 1):
        match = ITEM.match(line)
        if match:
            current = match.group(1)
            found[current] = (number, line)
        elif current and line.startswith("  ") and line.strip():
            found[current] = (found[current][0], found[current][1] + " " + line.strip())
        else:
            current = None
    return found


def paragraph(lines, start_text):
    """(line number, text) of the paragraph whose first line starts with `start_text`."""
    for number, line in enumerate(lines, 1):
        if line.startswith(start_text):
            text = []
            for more in lines[number - 1:]:
                if not more.strip():
                    break
                text.append(more)
            return number, " ".join(text)
    return None, ""


def check(readme_text, script_text):
    accepted, default, archs = script_facts(script_text)
    errors = []
    if not accepted or default != accepted:
        errors.append(f"compile_gpu.sh: accepts {sorted(accepted)} but runs {sorted(default)} by "
                      "default; this test expects them to be the same")
    all_archs = set().union(*archs.values())
    lines = readme_text.split("\n")
    usages = [(n, USAGE.search(l)) for n, l in enumerate(lines, 1) if USAGE.search(l)]
    if not usages:
        errors.append("README.md: no usage `scripts/compile_gpu.sh [BACKEND] ...`")
    for number, usage in usages:
        named = set(re.findall(r"\[([\w-]+)\]", usage.group(1)))
        if named != accepted:
            errors.append(f"README.md:{number}: the usage names {sorted(named)}, the script "
                          f"accepts {sorted(accepted)}")
    listed = {b: v for b, v in items(lines).items() if b in accepted or b.startswith(("cuda", "hip"))}
    for backend in sorted(accepted - set(listed)):
        errors.append(f"README.md: no item '- `{backend}`: ...' for compile_gpu.sh {backend}")
    for backend, (number, text) in sorted(listed.items()):
        if backend not in accepted:
            errors.append(f"README.md:{number}: item `{backend}`, which compile_gpu.sh does not "
                          "accept")
        elif set(ARCH.findall(text)) != archs[backend]:
            errors.append(f"README.md:{number}: `{backend}` names {sorted(set(ARCH.findall(text)))}, "
                          f"compile_gpu.sh compiles {sorted(archs[backend])}")
    number, text = paragraph(lines, CI_PARAGRAPH)
    if number is None:
        errors.append(f"README.md: no paragraph starting '{CI_PARAGRAPH}'")
    elif set(ARCH.findall(text)) != all_archs:
        errors.append(f"README.md:{number}: names {sorted(set(ARCH.findall(text)))}, "
                      f"compile_gpu.sh compiles {sorted(all_archs)}")
    for number, line in enumerate(lines, 1):
        if "not compile-checked" in line and set(ARCH.findall(line)) & all_archs:
            errors.append(f"README.md:{number}: says {sorted(set(ARCH.findall(line)))} are not "
                          "compile-checked; compile_gpu.sh compiles them")
    return errors


def self_test(readme_text, script_text):
    """Each break of the README must be rejected, the README itself accepted."""
    breaks = {
        "usage without hip-mi": lambda t: t.replace(" [hip-mi]", "", 1),
        "arch dropped from the cuda item": lambda t: re.sub(r"(- `cuda`:.*?) and sm_100", r"\1",
                                                            t, count=1, flags=re.S),
        "gfx942 not compile-checked": lambda t: t + "\nSo gfx942 is not compile-checked.\n",
        "hip-mi item removed": lambda t: re.sub(r"^- `hip-mi`:", "- hip-mi:", t, flags=re.M),
        "CI paragraph without gfx950": lambda t: t.replace("and gfx950 (MI355X) with Debian's",
                                                           "with Debian's"),
    }
    failed = 0
    if check(readme_text, script_text):
        print("self-test: the README itself is rejected; fix it first")
        failed += 1
    for name, breaking in breaks.items():
        broken = breaking(readme_text)
        rejected = broken != readme_text and bool(check(broken, script_text))
        print(f"self-test {name}: {'rejected' if rejected else 'NOT rejected'}")
        failed += not rejected
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(args.repo, "README.md"), encoding="utf-8") as f:
        readme_text = f.read()
    with open(os.path.join(args.repo, "scripts", "compile_gpu.sh"), encoding="utf-8") as f:
        script_text = f.read()
    if args.self_test:
        return self_test(readme_text, script_text)
    errors = check(readme_text, script_text)
    for error in errors:
        print(error)
    if errors:
        return 1
    print("compile_targets_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
