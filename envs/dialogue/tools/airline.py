"""The airline domain's tools: users, reservations and flights of tau2-bench's airline database.

Written for gfcr over `Database` records; they check what the airline policy says the API
checks (payment methods, balances, seats, flight availability) and, as the policy warns, leave
the rest (cancellation rules, which flights may change) to the agent. Results are the records
as JSON, the shapes tau2-bench's own tools return. Two deliberate differences from tau2-bench
26.3's code: the one-stop search computes the next day's date correctly (it wrote "2024-05-6"),
and a flight leaving exactly at the first leg's arrival time is not a connection.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any, ClassVar, Literal

from gfcr.envs.dialogue.tools.common import Toolkit, objects, one_of, require, to_json
from gfcr.errors import ToolError

NOW = "2024-05-15T15:00:00"  # the policy's "current time"
CABINS = ("business", "economy", "basic_economy")
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")  # a task makes at most three reservations
NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": "Dallas",
    "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": "Boston", "PHX": "Phoenix",
    "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte",
    "MSP": "Minneapolis", "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia",
}  # fmt: skip
Fields = dict[str, type | tuple[type, ...]]  # an object's fields: name -> accepted type(s)
FLIGHT: Fields = {"flight_number": str, "date": str}
PASSENGER: Fields = {"first_name": str, "last_name": str, "dob": str}
PAYMENT: Fields = {"payment_id": str, "amount": (int, float)}


def _object_schema(fields: dict[str, Any], descriptions: dict[str, str]) -> dict[str, Any]:
    kinds = {str: "string", (int, float): "number"}
    return {
        "type": "object",
        "properties": {
            name: {"type": kinds[kind], "description": descriptions[name]} for name, kind in fields.items()
        },
        "required": list(fields),
    }


_FLIGHT_ITEM = _object_schema(
    FLIGHT, {"flight_number": "Flight number, such as 'HAT001'.", "date": "The date, as 'YYYY-MM-DD'."}
)
_PASSENGER_ITEM = _object_schema(
    PASSENGER,
    {"first_name": "First name.", "last_name": "Last name.", "dob": "Date of birth, as 'YYYY-MM-DD'."},
)
_PAYMENT_ITEM = _object_schema(
    PAYMENT,
    {"payment_id": "A payment method id from the user's profile.", "amount": "The amount, in dollars."},
)


class AirlineTools(Toolkit):
    """Book, modify and cancel flight reservations; look up users, reservations and flights.

    >>> from gfcr.envs.dialogue.data import load_domain
    >>> from gfcr.envs.dialogue.db import Database
    >>> tools = AirlineTools(Database(load_domain("airline").tables))
    >>> tools.call("get_flight_status", {"flight_number": "HAT001", "date": "2024-05-03"})
    'cancelled'
    """

    names: ClassVar[tuple[str, ...]] = (
        "book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
        "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
        "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
        "update_reservation_passengers", "get_flight_status",
    )  # fmt: skip
    writes: ClassVar[frozenset[str]] = frozenset(
        {"book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
         "update_reservation_flights", "update_reservation_passengers"}
    )  # fmt: skip
    item_schemas: ClassVar[dict[tuple[str, str], dict[str, Any]]] = {
        ("book_reservation", "flights"): _FLIGHT_ITEM,
        ("book_reservation", "passengers"): _PASSENGER_ITEM,
        ("book_reservation", "payment_methods"): _PAYMENT_ITEM,
        ("update_reservation_flights", "flights"): _FLIGHT_ITEM,
        ("update_reservation_passengers", "passengers"): _PASSENGER_ITEM,
    }

    # -- reads ---------------------------------------------------------------------------------

    def get_user_details(self, user_id: str) -> str:
        """Get the details of a user, including their reservations.

        Args:
            user_id: The user ID, such as 'sara_doe_496'.
        """
        return to_json(self._user(user_id))

    def get_reservation_details(self, reservation_id: str) -> str:
        """Get the details of a reservation.

        Args:
            reservation_id: The reservation ID, such as '8JX2WO'.
        """
        return to_json(self._reservation(reservation_id))

    def get_flight_status(self, flight_number: str, date: str) -> str:
        """Get the status of a flight.

        Args:
            flight_number: The flight number.
            date: The date of the flight.
        """
        return self._flight_on(flight_number, date)["status"]

    def list_all_airports(self) -> str:
        """Returns a list of all available airports."""
        return to_json([{"iata": code, "city": city} for code, city in AIRPORTS.items()])

    def search_direct_flight(self, origin: str, destination: str, date: str) -> str:
        """Search for direct flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
        """
        return to_json(self._direct_flights(date, origin, destination))

    def search_onestop_flight(self, origin: str, destination: str, date: str) -> str:
        """Search for one-stop flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
        """
        pairs = []
        for first in self._direct_flights(date, origin, None):
            first["date"] = date
            arrival = first["scheduled_arrival_time_est"]
            next_date = _next_day(date) if "+1" in arrival else date
            for second in self._direct_flights(next_date, first["destination"], destination, arrival[:8]):
                second["date"] = next_date
                pairs.append([first, second])
        return to_json(pairs)

    # -- writes --------------------------------------------------------------------------------

    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: Literal["one_way", "round_trip"],
        cabin: Literal["basic_economy", "economy", "business"],
        flights: list[dict],
        passengers: list[dict],
        payment_methods: list[dict],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Literal["yes", "no"],
    ) -> str:
        """Book a reservation.

        Args:
            user_id: The ID of the user to book the reservation such as 'sara_doe_496'.
            origin: The IATA code for the origin city such as 'SFO'.
            destination: The IATA code for the destination city such as 'JFK'.
            flight_type: The type of flight such as 'one_way' or 'round_trip'.
            cabin: The cabin class such as 'basic_economy', 'economy', or 'business'.
            flights: An array of objects containing details about each piece of flight.
            passengers: An array of objects containing details about each passenger.
            payment_methods: An array of objects containing details about each payment method.
            total_baggages: The total number of baggage items to book the reservation.
            nonfree_baggages: The number of non-free baggage items to book the reservation.
            insurance: Whether the reservation has insurance.
        """
        one_of(flight_type, ("one_way", "round_trip"), "flight_type")
        one_of(cabin, CABINS, "cabin")
        one_of(insurance, ("yes", "no"), "insurance")
        flights = objects(flights, FLIGHT, "flights")
        passengers = objects(passengers, PASSENGER, "passengers")
        payments = [
            {**p, "amount": _whole(p["amount"])} for p in objects(payment_methods, PAYMENT, "payment_methods")
        ]
        user = self._user(user_id)
        reservation_id = next((r for r in NEW_RESERVATION_IDS if ("reservations", r) not in self.db), None)
        if reservation_id is None:
            raise ToolError("Too many reservations")
        booked = [self._segment(flight, cabin, len(passengers)) for flight in flights]
        total_price = sum(segment["price"] for segment in booked) * len(passengers)
        total_price += (30 * len(passengers) if insurance == "yes" else 0) + 50 * nonfree_baggages
        _check_payments(user, payments, total_price)

        user = self.db.edit("users", user_id)
        for payment in payments:
            method = user["payment_methods"][payment["payment_id"]]
            if method["source"] == "gift_card":
                method["amount"] -= payment["amount"]
            elif method["source"] == "certificate":
                del user["payment_methods"][payment["payment_id"]]
        for flight in flights:
            seats = self.db.edit("flights", flight["flight_number"])["dates"][flight["date"]][
                "available_seats"
            ]
            seats[cabin] -= len(passengers)
        reservation = {
            "reservation_id": reservation_id, "user_id": user_id, "origin": origin,
            "destination": destination, "flight_type": flight_type, "cabin": cabin, "flights": booked,
            "passengers": passengers, "payment_history": payments, "created_at": NOW,
            "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
            "status": None,
        }  # fmt: skip
        self.db.insert("reservations", reservation_id, reservation)
        user["reservations"].append(reservation_id)
        return to_json(reservation)

    def cancel_reservation(self, reservation_id: str) -> str:
        """Cancel the whole reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
        """
        self._reservation(reservation_id)
        reservation = self.db.edit("reservations", reservation_id)
        refunds = [
            {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]
        ]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"  # seats are not released, as in tau2-bench
        return to_json(reservation)

    def send_certificate(self, user_id: str, amount: int) -> str:
        """Send a certificate to a user. Be careful!

        Args:
            user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
            amount: The amount of the certificate to send.
        """
        user = self._user(user_id)
        for number in NEW_CERTIFICATE_NUMBERS:
            payment_id = f"certificate_{number}"
            if payment_id not in user["payment_methods"]:
                certificate = {"source": "certificate", "id": payment_id, "amount": float(amount)}
                self.db.edit("users", user_id)["payment_methods"][payment_id] = certificate
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ToolError("Too many certificates")

    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> str:
        """Update the baggage information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'
            total_baggages: The updated total number of baggage items included in the reservation.
            nonfree_baggages: The updated number of non-free baggage items included in the reservation.
            payment_id: The payment id stored in the user profile, such as 'credit_card_7815826'.
        """
        reservation = self._reservation(reservation_id)
        total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        payment = self._pay_for_update(reservation["user_id"], payment_id, total_price)
        reservation = self.db.edit("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return to_json(reservation)

    def update_reservation_flights(
        self,
        reservation_id: str,
        cabin: Literal["basic_economy", "economy", "business"],
        flights: list[dict],
        payment_id: str,
    ) -> str:
        """Update the flight information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            cabin: The cabin class of the reservation
            flights: Every flight of the ENTIRE new reservation, changed or not.
            payment_id: The payment id stored in the user profile, such as 'credit_card_7815826'.
        """
        one_of(cabin, CABINS, "cabin")
        flights = objects(flights, FLIGHT, "flights")
        reservation = self._reservation(reservation_id)
        travellers = len(reservation["passengers"])
        new_flights, total_price = [], 0
        for flight in flights:
            kept = next(
                (f for f in reservation["flights"]
                 if f["flight_number"] == flight["flight_number"] and f["date"] == flight["date"]
                 and cabin == reservation["cabin"]),
                None,
            )  # fmt: skip
            if kept is None:  # a new segment, at today's price
                kept = self._segment(flight, cabin, travellers)
            new_flights.append(kept)
            total_price += kept["price"] * travellers
        total_price -= sum(f["price"] for f in reservation["flights"]) * travellers
        payment = self._pay_for_update(reservation["user_id"], payment_id, total_price)
        reservation = self.db.edit("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["flights"] = copy.deepcopy(new_flights)  # kept segments may be shared records
        reservation["cabin"] = cabin  # seat counts are not updated, as in tau2-bench
        return to_json(reservation)

    def update_reservation_passengers(self, reservation_id: str, passengers: list[dict]) -> str:
        """Update the passenger information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            passengers: An array of objects containing details about each passenger.
        """
        passengers = objects(passengers, PASSENGER, "passengers")
        if len(passengers) != len(self._reservation(reservation_id)["passengers"]):
            raise ToolError("Number of passengers does not match")
        reservation = self.db.edit("reservations", reservation_id)
        reservation["passengers"] = passengers
        return to_json(reservation)

    # -- helpers -------------------------------------------------------------------------------

    def _user(self, user_id: str) -> dict[str, Any]:
        return require(self.db.get("users", user_id), f"User {user_id}")

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        return require(self.db.get("reservations", reservation_id), f"Reservation {reservation_id}")

    def _flight(self, flight_number: str) -> dict[str, Any]:
        return require(self.db.get("flights", flight_number), f"Flight {flight_number}")

    def _flight_on(self, flight_number: str, date: str) -> dict[str, Any]:
        return require(
            self._flight(flight_number)["dates"].get(date), f"Flight {flight_number} on date {date}"
        )

    def _segment(self, flight: dict[str, str], cabin: str, travellers: int) -> dict[str, Any]:
        """A reservation segment for `flight` at today's price; the flight must have seats to sell."""
        schedule = self._flight(flight["flight_number"])
        on_date = self._flight_on(flight["flight_number"], flight["date"])
        if on_date["status"] != "available":
            raise ToolError(f"Flight {flight['flight_number']} not available on date {flight['date']}")
        if on_date["available_seats"][cabin] < travellers:
            raise ToolError(f"Not enough seats on flight {flight['flight_number']}")
        return {
            "flight_number": flight["flight_number"], "origin": schedule["origin"],
            "destination": schedule["destination"], "date": flight["date"], "price": on_date["prices"][cabin],
        }  # fmt: skip

    def _direct_flights(
        self, date: str, origin: str | None, destination: str | None, leave_after: str | None = None
    ) -> list[dict[str, Any]]:
        found = []
        for flight in self.db.values("flights"):
            on_date = flight["dates"].get(date)
            if (
                (origin is None or flight["origin"] == origin)
                and (destination is None or flight["destination"] == destination)
                and on_date is not None
                and on_date["status"] == "available"
                and (leave_after is None or flight["scheduled_departure_time_est"] > leave_after)
            ):
                found.append({
                    "flight_number": flight["flight_number"], "origin": flight["origin"],
                    "destination": flight["destination"], "status": "available",
                    "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                    "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": None,
                    "available_seats": dict(on_date["available_seats"]), "prices": dict(on_date["prices"]),
                })  # fmt: skip
        return found

    def _pay_for_update(self, user_id: str, payment_id: str, total_price: int) -> dict[str, Any] | None:
        """Charge (or refund, if negative) `total_price` to one payment method; the payment record."""
        method = self._user(user_id)["payment_methods"].get(payment_id)
        if method is None:
            raise ToolError("Payment method not found")
        if method["source"] == "certificate":
            raise ToolError("Certificate cannot be used to update reservation")
        if method["source"] == "gift_card" and method["amount"] < total_price:
            raise ToolError("Gift card balance is not enough")
        if method["source"] == "gift_card":
            self.db.edit("users", user_id)["payment_methods"][payment_id]["amount"] -= total_price
        return {"payment_id": payment_id, "amount": total_price} if total_price != 0 else None


def _check_payments(user: dict[str, Any], payments: list[dict[str, Any]], total_price: int) -> None:
    """The payments must use the user's own methods, within their balances, and add up to the price."""
    for payment in payments:
        method = user["payment_methods"].get(payment["payment_id"])
        if method is None:
            raise ToolError(f"Payment method {payment['payment_id']} not found")
        if method["source"] in ("gift_card", "certificate") and method["amount"] < payment["amount"]:
            raise ToolError(f"Not enough balance in payment method {payment['payment_id']}")
    paid = sum(payment["amount"] for payment in payments)
    if paid != total_price:
        raise ToolError(f"Payment amount does not add up, total price is {total_price}, but paid {paid}")


def _whole(amount: int | float) -> int:
    """A payment amount in whole dollars (tau2-bench's payments are integers)."""
    if amount != int(amount):
        raise ToolError(f"payment amount must be whole dollars, got {amount}")
    return int(amount)


def _next_day(date: str) -> str:
    try:
        return (dt.date.fromisoformat(date) + dt.timedelta(days=1)).isoformat()
    except ValueError as e:
        raise ToolError(f"date must be in the format 'YYYY-MM-DD', got {date!r}") from e
