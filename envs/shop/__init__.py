"""The shop family: `gfcr/Shop-v0`, multi-step tool procedures over task kinds (skills transfer)."""

from gfcr.envs.shop.env import ShopEnv
from gfcr.envs.shop.tasks import shop_tasks

__all__ = ["ShopEnv", "shop_tasks"]
