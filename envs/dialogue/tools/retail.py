"""The retail domain's tools: users, orders and products of tau2-bench's retail database.

Written for gfcr over `Database` records; they check what the retail policy says the API
checks (order status, item and variant existence, availability, gift card balances) and return
the records as JSON, the shapes tau2-bench's own tools return. One deliberate difference from
tau2-bench 26.3's code: modifying several items of a pending order gives each item its own new
price and options (tau2-bench gave every item those of the last new item).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from gfcr.envs.dialogue.tools.common import Toolkit, require, strings, to_json
from gfcr.errors import ToolError

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
_ITEM_ID = {"type": "string", "description": "An item id, such as '1008292230'."}


class RetailTools(Toolkit):
    """Cancel, modify, return and exchange orders; look up users, orders and products.

    >>> from gfcr.envs.dialogue.data import load_domain
    >>> from gfcr.envs.dialogue.db import Database
    >>> tools = RetailTools(Database(load_domain("retail").tables))
    >>> tools.call("find_user_id_by_name_zip", {"first_name": "Noah", "last_name": "Brown", "zip": "80279"})
    'noah_brown_6181'
    >>> tools.call("cancel_pending_order", {"order_id": "#W2611340", "reason": "no longer needed"})
    Traceback (most recent call last):
    ...
    gfcr.errors.ToolError: Non-pending order cannot be cancelled
    """

    names: ClassVar[tuple[str, ...]] = (
        "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_name_zip",
        "find_user_id_by_email", "get_order_details", "get_product_details", "get_user_details",
        "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
        "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items",
        "transfer_to_human_agents",
    )  # fmt: skip
    writes: ClassVar[frozenset[str]] = frozenset(
        {"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
         "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
         "return_delivered_order_items"}
    )  # fmt: skip
    item_schemas: ClassVar[dict[tuple[str, str], dict[str, Any]]] = {
        (tool, argument): _ITEM_ID
        for tool in (
            "exchange_delivered_order_items",
            "modify_pending_order_items",
            "return_delivered_order_items",
        )
        for argument in ("item_ids", "new_item_ids")
        if (tool, argument) != ("return_delivered_order_items", "new_item_ids")
    }

    # -- reads ---------------------------------------------------------------------------------

    def find_user_id_by_email(self, email: str) -> str:
        """Find user id by email. If the user is not found, the function will return an error message.

        Args:
            email: The email of the user, such as 'something@example.com'.
        """
        for user in self.db.values("users"):
            if user["email"].lower() == email.lower():
                return user["user_id"]
        raise ToolError("User not found")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Find user id by first name, last name, and zip code. If the user is not found, the function
        will return an error message. By default, find user id by email, and only call this function if the
        user is not found by email or cannot remember email.

        Args:
            first_name: The first name of the customer, such as 'John'.
            last_name: The last name of the customer, such as 'Doe'.
            zip: The zip code of the customer, such as '12345'.
        """
        for user in self.db.values("users"):
            name = user["name"]
            if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (
                first_name.lower(), last_name.lower(), zip,
            ):  # fmt: skip
                return user["user_id"]
        raise ToolError("User not found")

    def get_user_details(self, user_id: str) -> str:
        """Get the details of a user, including their orders.

        Args:
            user_id: The user id, such as 'sara_doe_496'.
        """
        return to_json(self._user(user_id))

    def get_order_details(self, order_id: str) -> str:
        """Get the status and details of an order.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
        """
        return to_json(self._order(order_id))

    def get_product_details(self, product_id: str) -> str:
        """Get the inventory details of a product.

        Args:
            product_id: The product id, such as '6086499569' (a product id is not an item id).
        """
        return to_json(self._product(product_id))

    def list_all_product_types(self) -> str:
        """List the name and product id of all product types. Each product type has a variety of
        different items with unique item ids and options. There are only 50 product types in the store."""
        products = {product["name"]: product["product_id"] for product in self.db.values("products")}
        return to_json(dict(sorted(products.items())))

    # -- writes --------------------------------------------------------------------------------

    def cancel_pending_order(self, order_id: str, reason: str) -> str:
        """Cancel a pending order. If the order is already processed or delivered, it cannot be cancelled.
        The agent needs to explain the cancellation detail and ask for explicit user confirmation (yes/no)
        to proceed. If the user confirms, the order status will be changed to 'cancelled' and the payment
        will be refunded. The refund will be added to the user's gift card balance immediately if the
        payment was made using a gift card, otherwise the refund would take 5-7 business days to process.
        The function returns the order details after the cancellation.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            reason: The reason for cancellation: 'no longer needed' or 'ordered by mistake'.
        """
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise ToolError("Invalid reason")
        for payment in order["payment_history"]:
            self._method(order["user_id"], payment["payment_method_id"])
        order = self.db.edit("orders", order_id)
        refunds = [
            {"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]}
            for p in order["payment_history"]
        ]
        for refund in refunds:
            self._add_to_gift_card(order["user_id"], refund["payment_method_id"], refund["amount"])
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return to_json(order)

    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        """Exchange items in a delivered order to new items of the same product type. For a delivered
        order, return or exchange can be only done once by the agent. The agent needs to explain the
        exchange detail and ask for explicit user confirmation (yes/no) to proceed.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            item_ids: The item ids to be exchanged, each such as '1008292230'; duplicates allowed.
            new_item_ids: The new item ids, one per item id at the same position, of the same product.
            payment_method_id: The payment method id to pay or refund with, such as 'gift_card_0000000'.
        """
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be exchanged")
        self._check_items_in_order(order, strings(item_ids, "item_ids"), "Number of {} not found.")
        variants = self._new_variants(order, item_ids, strings(new_item_ids, "new_item_ids"))
        difference = round(sum(new["price"] - old["price"] for old, new in variants), 2)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < difference:
            raise ToolError("Insufficient gift card balance to pay for the price difference")
        order = self.db.edit("orders", order_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = difference
        return to_json(order)

    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> str:
        """Modify the shipping address of a pending order. The agent needs to explain the modification
        detail and ask for explicit user confirmation (yes/no) to proceed.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            address1: The first line of the address, such as '123 Main St'.
            address2: The second line of the address, such as 'Apt 1' or ''.
            city: The city, such as 'San Francisco'.
            state: The state, such as 'CA'.
            country: The country, such as 'USA'.
            zip: The zip code, such as '12345'.
        """
        if "pending" not in self._order(order_id)["status"]:
            raise ToolError("Non-pending order cannot be modified")
        order = self.db.edit("orders", order_id)
        order["address"] = _address(address1, address2, city, state, country, zip)
        return to_json(order)

    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        """Modify items in a pending order to new items of the same product type. For a pending order,
        this function can only be called once. The agent needs to explain the exchange detail and ask for
        explicit user confirmation (yes/no) to proceed.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            item_ids: The item ids to be modified, each such as '1008292230'; duplicates allowed.
            new_item_ids: The new item ids, one per item id at the same position, of the same product.
            payment_method_id: The payment method id to pay or refund with, such as 'gift_card_0000000'.
        """
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be modified")
        self._check_items_in_order(order, strings(item_ids, "item_ids"), "{} not found")
        if any(old == new for old, new in zip(item_ids, strings(new_item_ids, "new_item_ids"), strict=False)):
            raise ToolError("The new item id should be different from the old item id")
        variants = self._new_variants(order, item_ids, new_item_ids)
        difference = sum(new["price"] - old["price"] for old, new in variants)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < difference:
            raise ToolError("Insufficient gift card balance to pay for the new item")
        order = self.db.edit("orders", order_id)
        order["payment_history"].append({
            "transaction_type": "payment" if difference > 0 else "refund",
            "amount": abs(difference),
            "payment_method_id": payment_method_id,
        })  # fmt: skip
        self._add_to_gift_card(order["user_id"], payment_method_id, -difference)
        unchanged = list(order["items"])
        for old, new in variants:  # each listed item takes its own new variant
            item = next(i for i in unchanged if i["item_id"] == old["item_id"])
            unchanged.remove(item)
            item.update(item_id=new["item_id"], price=new["price"], options=dict(new["options"]))
        order["status"] = "pending (item modified)"
        return to_json(order)

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> str:
        """Modify the payment method of a pending order. The agent needs to explain the modification
        detail and ask for explicit user confirmation (yes/no) to proceed.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            payment_method_id: The payment method id to pay or refund with, such as 'gift_card_0000000'.
        """
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ToolError("Non-pending order cannot be modified")
        method = self._method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ToolError("There should be exactly one payment for a pending order")
        old_method_id, amount = history[0]["payment_method_id"], history[0]["amount"]
        if old_method_id == payment_method_id:
            raise ToolError("The new payment method should be different from the current one")
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ToolError("Insufficient gift card balance to pay for the order")
        self._method(order["user_id"], old_method_id)
        order = self.db.edit("orders", order_id)
        order["payment_history"].extend([
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_method_id},
        ])  # fmt: skip
        self._add_to_gift_card(order["user_id"], payment_method_id, -amount)
        self._add_to_gift_card(order["user_id"], old_method_id, amount)
        return to_json(order)

    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> str:
        """Modify the default address of a user. The agent needs to explain the modification detail and
        ask for explicit user confirmation (yes/no) to proceed.

        Args:
            user_id: The user id, such as 'sara_doe_496'.
            address1: The first line of the address, such as '123 Main St'.
            address2: The second line of the address, such as 'Apt 1' or ''.
            city: The city, such as 'San Francisco'.
            state: The state, such as 'CA'.
            country: The country, such as 'USA'.
            zip: The zip code, such as '12345'.
        """
        self._user(user_id)
        user = self.db.edit("users", user_id)
        user["address"] = _address(address1, address2, city, state, country, zip)
        return to_json(user)

    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
        """Return some items of a delivered order. The order status will be changed to 'return
        requested'. The agent needs to explain the return detail and ask for explicit user confirmation
        (yes/no) to proceed. The user will receive follow-up email for how and where to return the item.

        Args:
            order_id: The order id, such as '#W0000000' (mind the '#' at the beginning).
            item_ids: The item ids to be returned, each such as '1008292230'; duplicates allowed.
            payment_method_id: The payment method id to pay or refund with, such as 'gift_card_0000000'.
        """
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be returned")
        method = self._method(order["user_id"], payment_method_id)
        if (
            method["source"] != "gift_card"
            and payment_method_id != order["payment_history"][0]["payment_method_id"]
        ):
            raise ToolError("Payment method should be the original payment method")
        self._check_items_in_order(order, strings(item_ids, "item_ids"), "Some item not found")
        order = self.db.edit("orders", order_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return to_json(order)

    # -- helpers -------------------------------------------------------------------------------

    def _user(self, user_id: str) -> dict[str, Any]:
        return require(self.db.get("users", user_id), "User")

    def _order(self, order_id: str) -> dict[str, Any]:
        return require(self.db.get("orders", order_id), "Order")

    def _product(self, product_id: str) -> dict[str, Any]:
        return require(self.db.get("products", product_id), "Product")

    def _method(self, user_id: str, payment_method_id: str) -> dict[str, Any]:
        return require(self._user(user_id)["payment_methods"].get(payment_method_id), "Payment method")

    def _add_to_gift_card(self, user_id: str, payment_method_id: str, amount: float) -> None:
        """Credit (or, if negative, debit) a gift card at once; other methods settle outside the shop."""
        if self._method(user_id, payment_method_id)["source"] == "gift_card":
            method = self.db.edit("users", user_id)["payment_methods"][payment_method_id]
            method["balance"] = round(method["balance"] + amount, 2)

    @staticmethod
    def _check_items_in_order(order: dict[str, Any], item_ids: list[str], message: str) -> None:
        """Every listed item (duplicates counted) must be in the order."""
        in_order = Counter(item["item_id"] for item in order["items"])
        for item_id, wanted in Counter(item_ids).items():
            if wanted > in_order[item_id]:
                raise ToolError(message.format(item_id))

    def _new_variants(
        self, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(old item, new variant) pairs; the new variants must be available ones of the same product."""
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match.")
        pairs = []
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            old = next(item for item in order["items"] if item["item_id"] == item_id)
            variant = require(self._product(old["product_id"])["variants"].get(new_item_id), "Variant")
            if not variant["available"]:
                raise ToolError(f"New item {new_item_id} not found or available")
            pairs.append((old, variant))
        return pairs


def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "country": country,
        "state": state,
        "zip": zip,
    }
