"""`python -m gfcr`: the same command line as `gfcr`."""

from gfcr.apps.cli import app

if __name__ == "__main__":
    app(prog_name="gfcr")
