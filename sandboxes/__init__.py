"""Code-execution backends (local isolated, Docker); built in their own issue."""
