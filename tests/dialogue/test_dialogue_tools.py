"""The airline and retail tools over the real tau2-bench databases: effects, checks, messages."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gfcr.envs.dialogue import Database, load_domain
from gfcr.envs.dialogue.tools import AirlineTools, RetailTools
from gfcr.errors import ToolError


@pytest.fixture
def airline() -> AirlineTools:
    return AirlineTools(Database(load_domain("airline").tables))


@pytest.fixture
def retail() -> RetailTools:
    return RetailTools(Database(load_domain("retail").tables))


def booking(**changes) -> dict:
    """Two economy passengers on HAT002 (LGA-PHX) on May 16 at $166 each, with insurance and one paid bag."""
    arguments = {
        "user_id": "mia_li_3668", "origin": "LGA", "destination": "PHX", "flight_type": "one_way",
        "cabin": "economy", "flights": [{"flight_number": "HAT002", "date": "2024-05-16"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"},
                       {"first_name": "Amelia", "last_name": "Ahmed", "dob": "1957-03-21"}],
        "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250},
                            {"payment_id": "credit_card_4421486", "amount": 192}],
        "total_baggages": 1, "nonfree_baggages": 1, "insurance": "yes",
    }  # fmt: skip
    return {**arguments, **changes}


def test_booking_charges_the_methods_takes_the_seats_and_uses_up_the_certificate(airline):
    reservation = json.loads(airline.call("book_reservation", booking()))
    assert reservation["reservation_id"] == "HATHAT" and reservation["flights"][0]["price"] == 166
    user = airline.db.get("users", "mia_li_3668")
    assert "certificate_7504069" not in user["payment_methods"] and user["reservations"][-1] == "HATHAT"
    assert airline.db.get("flights", "HAT002")["dates"]["2024-05-16"]["available_seats"]["economy"] == 11
    assert json.loads(airline.call("book_reservation", booking(payment_methods=[
        {"payment_id": "credit_card_4421486", "amount": 442}])))["reservation_id"] == "HATHAU"  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"payment_methods": [{"payment_id": "credit_card_4421486", "amount": 400}]},
      "Payment amount does not add up, total price is 442, but paid 400"),
     ({"payment_methods": [{"payment_id": "certificate_4856383", "amount": 442}]},
      "Not enough balance in payment method certificate_4856383"),
     ({"flights": [{"flight_number": "HAT002", "date": "2024-05-15"}]},
      "Flight HAT002 not available on date 2024-05-15"),
     ({"cabin": "first"}, "cabin must be one of ['business', 'economy', 'basic_economy'], got 'first'"),
     ({"passengers": [{"first_name": "Mia"}]}, "passengers item 1 has no 'last_name'"),
     ({"user_id": "nobody_1"}, "User nobody_1 not found")],
)  # fmt: skip
def test_booking_refuses_what_the_policy_says_the_api_checks(airline, changes, message):
    with pytest.raises(ToolError, match=message.replace("[", r"\[").replace("]", r"\]")):
        airline.call("book_reservation", booking(**changes))
    assert airline.db.changed_keys() == []  # nothing was written before the check failed


def test_updates_charge_the_difference_and_certificates_cannot_pay(airline):
    bags = {"reservation_id": "UUN48W", "total_baggages": 7, "nonfree_baggages": 1}  # james_taylor_7043's
    with pytest.raises(ToolError, match="Certificate cannot be used to update reservation"):
        airline.call("update_reservation_baggages", {**bags, "payment_id": "certificate_9380982"})
    updated = json.loads(
        airline.call("update_reservation_baggages", {**bags, "payment_id": "gift_card_5634230"})
    )
    assert updated["payment_history"][-1] == {"payment_id": "gift_card_5634230", "amount": 50}
    assert (
        airline.db.get("users", "james_taylor_7043")["payment_methods"]["gift_card_5634230"]["amount"] == 17.0
    )
    with pytest.raises(ToolError, match="Gift card balance is not enough"):
        airline.call(
            "update_reservation_baggages", {**bags, "nonfree_baggages": 2, "payment_id": "gift_card_5634230"}
        )


def test_one_stop_search_continues_on_the_next_day_after_an_overnight_leg(airline):
    pairs = json.loads(
        airline.call("search_onestop_flight", {"origin": "LGA", "destination": "LAS", "date": "2024-05-16"})
    )
    overnight = [
        (a["flight_number"], a["date"], b["flight_number"], b["date"])
        for a, b in pairs
        if a["date"] != b["date"]
    ]
    assert ("HAT002", "2024-05-16", "HAT027", "2024-05-17") in overnight


def test_certificates_are_numbered_and_cancellation_refunds_every_payment(airline):
    assert airline.call("send_certificate", {"user_id": "mia_li_3668", "amount": 100}) == (
        "Certificate certificate_3221322 added to user mia_li_3668 with amount 100."
    )
    cancelled = json.loads(airline.call("cancel_reservation", {"reservation_id": "4WQ150"}))
    assert cancelled["status"] == "cancelled" and cancelled["payment_history"][-1]["amount"] == -4986


def test_modifying_several_items_gives_each_its_own_price_and_options(retail):
    """Regression: tau2-bench 26.3 gave every modified item the price and options of the last one."""
    order = json.loads(retail.call("modify_pending_order_items", {
        "order_id": "#W9348897", "item_ids": ["6117189161", "7453605304", "3799046073"],
        "new_item_ids": ["6700049080", "5320792178", "3234800602"],
        "payment_method_id": "credit_card_8853416"}))  # fmt: skip
    items = {item["item_id"]: (item["price"], item["options"].get("color")) for item in order["items"]}
    assert items["6700049080"] == (466.75, "black") and items["3234800602"] == (46.66, "red")
    assert order["status"] == "pending (item modified)"
    assert order["payment_history"][-1]["transaction_type"] == "refund"
    assert order["payment_history"][-1]["amount"] == pytest.approx(
        481.5 + 150.01 + 53.27 - 466.75 - 135.24 - 46.66
    )


def test_cancelling_an_order_paid_by_gift_card_refunds_the_card_at_once(retail):
    order = json.loads(
        retail.call("cancel_pending_order", {"order_id": "#W6779827", "reason": "ordered by mistake"})
    )
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    card = retail.db.get("users", "ethan_lopez_6291")["payment_methods"]["gift_card_7219486"]
    assert card["balance"] == round(49.0 + 4079.45, 2)
    with pytest.raises(ToolError, match="Non-pending order cannot be cancelled"):
        retail.call("cancel_pending_order", {"order_id": "#W6779827", "reason": "ordered by mistake"})


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [("cancel_pending_order", {"order_id": "#W2611340", "reason": "no longer needed"}, "Non-pending order"),
     ("cancel_pending_order", {"order_id": "#W6779827", "reason": "too expensive"}, "Invalid reason"),
     ("get_order_details", {"order_id": "W2611340"}, "Order not found"),
     ("exchange_delivered_order_items", {"order_id": "#W4316152", "item_ids": ["7292993796", "7292993796"],
      "new_item_ids": ["3761330360", "9647374798"], "payment_method_id": "gift_card_7245904"},
      "Insufficient gift card balance"),
     ("modify_pending_order_items", {"order_id": "#W9348897", "item_ids": ["6117189161"], "new_item_ids": [],
      "payment_method_id": "credit_card_8853416"}, "The number of items to be exchanged should match"),
     ("return_delivered_order_items", {"order_id": "#W4316152", "item_ids": "7292993796",
      "payment_method_id": "gift_card_7245904"}, "must be array"),
     ("calculate", {"expression": "__import__('os')"}, "Invalid characters in expression")],
)  # fmt: skip
def test_retail_tools_refuse_with_a_clear_message(retail, tool, arguments, message):
    with pytest.raises(ToolError, match=message):
        retail.call(tool, arguments)
    assert retail.db.changed_keys() == []


def test_calculate_rounds_like_tau2_bench_and_refuses_powers_and_zero_division(retail):
    assert retail.call("calculate", {"expression": "652.61 - 642.72"}) == "9.89"
    assert retail.call("calculate", {"expression": "(1 + 2) * -4 / 3"}) == "-4.0"
    with pytest.raises(ToolError, match="only numbers"):
        retail.call("calculate", {"expression": "9**9**9**9"})  # would never finish under eval()
    with pytest.raises(ToolError, match="division by zero"):
        retail.call("calculate", {"expression": "1 / (2 - 2)"})


def test_tool_schemas_describe_array_items_and_allowed_values(airline):
    specs = {spec.name: spec.to_openai()["function"] for spec in airline.specs()}
    booking_parameters = specs["book_reservation"]["parameters"]["properties"]
    assert booking_parameters["cabin"]["enum"] == ["basic_economy", "economy", "business"]
    assert booking_parameters["flights"]["items"]["required"] == ["flight_number", "date"]
    assert len(specs) == 14 and len(RetailTools(Database(load_domain("retail").tables)).specs()) == 15


_IDS = ["#W9348897", "#W1679211", "UUN48W", "HAT002", "2024-05-16", "mia_li_3668", "economy",
        "gift_card_5634230", "credit_card_8853416", "6117189161", "no longer needed", "yes", ""]  # fmt: skip
_VALUES = st.one_of(
    st.sampled_from(_IDS),
    st.text(max_size=12),
    st.integers(-5, 5000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_KEYS = ["order_id", "reservation_id", "user_id", "item_ids", "new_item_ids", "payment_method_id",
         "payment_id", "flights", "passengers", "payment_methods", "cabin", "date", "amount", "expression",
         "email", "zip", "reason", "total_baggages", "nonfree_baggages"]  # fmt: skip
_ITEMS = st.dictionaries(
    st.sampled_from(["flight_number", "date", "payment_id", "amount", "first_name"]), _VALUES
)
_ARGUMENTS = st.dictionaries(
    st.sampled_from(_KEYS), _VALUES | st.lists(_VALUES | _ITEMS, max_size=3), max_size=6
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tools_refuse_any_arguments_with_a_tool_error_never_a_crash(airline, retail, data):
    tools = data.draw(st.sampled_from([airline, retail]))
    name = data.draw(st.sampled_from(tools.names))
    arguments = data.draw(_ARGUMENTS | st.fixed_dictionaries(
        {p: _VALUES for p in tools.specs()[tools.names.index(name)].parameters["properties"]}))  # fmt: skip
    try:
        assert isinstance(tools.call(name, arguments), str)
    except ToolError:
        pass
