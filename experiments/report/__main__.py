"""``python -m experiments.report [--check]``: write the generated tables of README.md and docs/ from the
result files (``--check``: change nothing, exit 1 if any page differs from what the result files give)."""
import difflib
import sys
from pathlib import Path

from experiments.common import script_parser
from experiments.report import REPO, backfill, render, run, stray


def main(argv=None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a page differs")
    parser.add_argument("--backfill", nargs="+", type=Path, metavar="FILE", default=None,
                        help="give these result files (written before provenance was recorded) a backfilled "
                             "provenance record naming --command and the commit that added them, then stop")
    parser.add_argument("--command", default=None, help="with --backfill: the command that wrote the files")
    args = parser.parse_args(argv)
    if args.backfill:
        if not args.command:
            parser.error("--backfill needs --command (the command that wrote the files, as in the store's index)")
        for path in args.backfill:
            backfill(path, args.command)
            print(f"backfilled {path}")
        return 0
    differ, unused = run(check=args.check)
    for page in differ:
        name = page.relative_to(REPO)
        if args.check:
            old = page.read_text(encoding="utf-8")
            diff = difflib.unified_diff(old.splitlines(), render(old).splitlines(), f"{name} (committed)",
                                        f"{name} (from the result files)", lineterm="", n=1)
            print("\n".join(diff))
        else:
            print(f"rewrote {name}")
    if unused:
        print(f"generators no page uses: {', '.join(unused)}")
    numbers = stray()
    for page, lines in numbers.items():
        print(f"{page.relative_to(REPO)}: {len(lines)} line(s) with numbers from no result file, e.g. {lines[0][:120]!r}")
    if args.check and (differ or unused or numbers):
        print(f"{len(differ)} page(s) differ from the result files; run python -m experiments.report", file=sys.stderr)
        return 1
    print(f"{len(differ)} page(s) {'differ' if args.check else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
