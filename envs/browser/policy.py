"""Which scripts may run on the site's pages: those the server wrote, marked with this process's nonce.

Every response of the loopback server carries a Content-Security-Policy. A page the server wrote
scripts into (a MiniWoB task page, an app page) runs only the script elements that carry
`SCRIPT_NONCE`; any other response runs no script at all. So markup that an agent gets a page to
insert (MiniWoB's terminal writes the command typed into it as HTML) runs nothing: no handler
attribute, no `javascript:` URL, no script element without the nonce, which Chromium hides from
the page's DOM and the agent never sees. The agent has no way to run script, and the reward
globals a MiniWoB page holds were set by the page's own code.

>>> own_scripts_policy() == f"script-src 'nonce-{SCRIPT_NONCE}'; object-src 'none'"
True
>>> own_scripts_policy(with_eval=True).endswith("'unsafe-eval'; object-src 'none'")
True
"""

from __future__ import annotations

import secrets

SCRIPT_NONCE = secrets.token_urlsafe(16)
NO_SCRIPTS = "script-src 'none'; object-src 'none'"


def own_scripts_policy(with_eval: bool = False) -> str:
    """The policy of a page whose own scripts run; `with_eval`: they may `eval` and `new Function` too."""
    unsafe_eval = " 'unsafe-eval'" if with_eval else ""
    return f"script-src 'nonce-{SCRIPT_NONCE}'{unsafe_eval}; object-src 'none'"
