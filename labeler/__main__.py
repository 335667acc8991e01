"""`python -m labeler`: the same entry point as the `labeler` command."""

from labeler.cli import main

if __name__ == "__main__":
    main()
