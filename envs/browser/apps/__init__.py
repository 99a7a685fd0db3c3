"""gfcr's own web apps, served on loopback: a shop, a hotel booking site and a mail client.

>>> sorted(APPS), APPS["shop"].task(0).id
(['booking', 'mail', 'shop'], 'shop/0')
"""

from __future__ import annotations

from gfcr.envs.browser.apps.app import App
from gfcr.envs.browser.apps.booking import BookingApp
from gfcr.envs.browser.apps.mail import MailApp
from gfcr.envs.browser.apps.shop import ShopApp

APPS: dict[str, App] = {app.name: app for app in (ShopApp(), BookingApp(), MailApp())}

__all__ = ["APPS", "App"]
