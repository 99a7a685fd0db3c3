"""Questions over the tau2 retail and airline databases with gold SQL, written for gfcr.

Same rules as `tasks_chinook`: every question names the columns to return, and ordered gold
queries break their ties (checked by `gfcr.envs.sql.data.validate`).
"""

from __future__ import annotations

from gfcr.envs.sql.data.questions import Difficulty, SQLQuestion


def _r(
    number: int, question: str, sql: str, difficulty: Difficulty, features: str, **dialect_sql: str
) -> SQLQuestion:
    return SQLQuestion(
        f"tau2_retail/{number:03d}",
        "tau2_retail",
        question,
        sql,
        difficulty,
        tuple(features.split()),
        dialect_sql,  # type: ignore[arg-type]
    )


def _a(
    number: int, question: str, sql: str, difficulty: Difficulty, features: str, **dialect_sql: str
) -> SQLQuestion:
    return SQLQuestion(
        f"tau2_airline/{number:03d}",
        "tau2_airline",
        question,
        sql,
        difficulty,
        tuple(features.split()),
        dialect_sql,  # type: ignore[arg-type]
    )


# Minutes between a flight's scheduled and actual departure, per engine.
_DELAY = (
    "EXTRACT(EPOCH FROM (d.actual_departure_time_est "
    "- (d.flight_date + f.scheduled_departure_time_est))) / 60"
)
_SQLITE_DELAY = (
    "ROUND((julianday(d.actual_departure_time_est) "
    "- julianday(d.flight_date || ' ' || f.scheduled_departure_time_est)) * 1440)"
)

RETAIL: tuple[SQLQuestion, ...] = (
    _r(
        1,
        "How many users does the store have? Return the count.",
        "SELECT COUNT(*) FROM users",
        "easy",
        "aggregate",
    ),
    _r(
        2,
        "How many orders are there in each status? Return the status and the number of orders.",
        "SELECT status, COUNT(*) FROM orders GROUP BY status",
        "easy",
        "group",
    ),
    _r(
        3,
        "How many product variants are currently unavailable? Return the count.",
        "SELECT COUNT(*) FROM variants WHERE NOT available",
        "easy",
        "filter aggregate",
    ),
    _r(
        4,
        "Which users live in Denver? Return their user ids.",
        "SELECT user_id FROM users WHERE city = 'Denver'",
        "easy",
        "filter",
    ),
    _r(
        5,
        "What is the total balance of all gift cards? Return the sum.",
        "SELECT SUM(balance) FROM payment_methods WHERE source = 'gift_card'",
        "easy",
        "filter aggregate",
    ),
    _r(
        6,
        "List the product names in alphabetical order.",
        "SELECT name FROM products ORDER BY name",
        "easy",
        "sort",
    ),
    _r(
        7,
        "How many variants does each product have? Return the product name and the number of variants, "
        "most variants first (ties by product name).",
        "SELECT products.name, COUNT(*) AS variants FROM products JOIN variants ON variants.product_id = "
        "products.product_id "
        "GROUP BY products.product_id, products.name ORDER BY variants DESC, products.name",
        "medium",
        "join group sort",
    ),
    _r(
        8,
        "What are the cheapest and most expensive variant prices of each product? Return the product name, "
        "the minimum price and the maximum price.",
        "SELECT products.name, MIN(variants.price), MAX(variants.price) FROM products "
        "JOIN variants ON variants.product_id = products.product_id GROUP BY products.product_id, "
        "products.name",
        "medium",
        "join group",
    ),
    _r(
        9,
        "Which colours are offered by the most variants? Return the colour and the number of variants with "
        "that "
        "colour, for the 5 most common colours, most common first.",
        "SELECT option_value, COUNT(*) AS variants FROM variant_options WHERE option_name = 'color' "
        "GROUP BY option_value ORDER BY variants DESC, option_value LIMIT 5",
        "medium",
        "filter group sort limit",
    ),
    _r(
        10,
        "Which users have placed more than 5 orders? Return the user id, first name, last name and number "
        "of orders.",
        "SELECT users.user_id, users.first_name, users.last_name, COUNT(*) FROM users "
        "JOIN orders ON orders.user_id = users.user_id GROUP BY users.user_id, users.first_name, "
        "users.last_name "
        "HAVING COUNT(*) > 5",
        "medium",
        "join group having",
    ),
    _r(
        11,
        "What is the total amount refunded, per payment method source (credit_card, paypal, gift_card)? "
        "Return the source and the refunded amount.",
        "SELECT payment_methods.source, SUM(order_payments.amount) FROM order_payments "
        "JOIN payment_methods ON payment_methods.payment_method_id = order_payments.payment_method_id "
        "WHERE order_payments.transaction_type = 'refund' GROUP BY payment_methods.source",
        "medium",
        "join filter group",
    ),
    _r(
        12,
        "How many orders were shipped to a city different from the city of the user's own address? Return "
        "the count.",
        "SELECT COUNT(*) FROM orders JOIN users ON users.user_id = orders.user_id WHERE orders.city <> "
        "users.city",
        "medium",
        "join filter aggregate",
    ),
    _r(
        13,
        "How many items were ordered of each product across all orders that were not cancelled? Return the "
        "product "
        "name and the number of order lines, most first (ties by product name).",
        "SELECT products.name, COUNT(*) AS ordered FROM order_items JOIN orders ON orders.order_id = "
        "order_items.order_id "
        "JOIN products ON products.product_id = order_items.product_id WHERE orders.status <> 'cancelled' "
        "GROUP BY products.product_id, products.name ORDER BY ordered DESC, products.name",
        "medium",
        "join filter group sort",
    ),
    _r(
        14,
        "Which users have no gift card? Return how many such users there are.",
        "SELECT COUNT(*) FROM users WHERE user_id NOT IN (SELECT user_id FROM payment_methods WHERE source "
        "= 'gift_card')",
        "medium",
        "subquery aggregate",
    ),
    _r(
        15,
        "Which orders contain the same item (item id) more than once? Return the order ids.",
        "SELECT DISTINCT order_id FROM order_items GROUP BY order_id, item_id HAVING COUNT(*) > 1",
        "medium",
        "group having distinct",
    ),
    _r(
        16,
        "Which pending orders have the largest number of items? Return the order id and the number of items "
        "(all orders tied for the maximum).",
        "WITH sizes AS (SELECT orders.order_id, COUNT(*) AS items FROM orders JOIN order_items ON "
        "order_items.order_id = orders.order_id "
        "WHERE orders.status = 'pending' GROUP BY orders.order_id) SELECT order_id, items FROM sizes "
        "WHERE items = (SELECT MAX(items) FROM sizes)",
        "hard",
        "cte subquery join group",
    ),
    _r(
        17,
        "Which users paid the most in net (payments minus refunds, over all their orders)? Return the user "
        "id and the "
        "net amount rounded to 2 decimal places, for the 5 users with the highest net amount, highest first.",
        "SELECT orders.user_id, ROUND(SUM(CASE WHEN order_payments.transaction_type = 'refund' THEN "
        "-order_payments.amount "
        "ELSE order_payments.amount END), 2) AS net FROM orders JOIN order_payments ON "
        "order_payments.order_id = orders.order_id "
        "GROUP BY orders.user_id ORDER BY net DESC, orders.user_id LIMIT 5",
        "hard",
        "case join group sort limit",
    ),
    _r(
        18,
        "Which product is the most expensive on average (average variant price)? Return the product name "
        "and the "
        "average price rounded to 2 decimal places.",
        "WITH averages AS (SELECT product_id, ROUND(AVG(price), 2) AS average FROM variants GROUP BY "
        "product_id) "
        "SELECT products.name, averages.average FROM averages JOIN products ON products.product_id = "
        "averages.product_id "
        "WHERE averages.average = (SELECT MAX(average) FROM averages)",
        "hard",
        "cte subquery join",
    ),
    _r(
        19,
        "Rank the states by number of users: return the state, its number of users and its dense rank (1 "
        "for the "
        "state with most users; equal counts share a rank), for states with at least 20 users.",
        "SELECT state, COUNT(*) AS users, DENSE_RANK() OVER (ORDER BY COUNT(*) DESC) FROM users GROUP BY "
        "state "
        "HAVING COUNT(*) >= 20",
        "hard",
        "window group having",
    ),
    _r(
        20,
        "What share of all orders does each status account for? Return the status and its percentage of "
        "orders "
        "rounded to 1 decimal place.",
        "SELECT status, ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (), 1) FROM orders GROUP BY status",
        "hard",
        "window group",
    ),
    _r(
        21,
        "Which users have at least one delivered order and at least one cancelled order? Return their user "
        "ids.",
        "SELECT user_id FROM orders WHERE status = 'delivered' INTERSECT SELECT user_id FROM orders WHERE "
        "status = 'cancelled'",
        "medium",
        "set_op filter",
    ),
    _r(
        22,
        "For each user with orders, what is the most expensive single item they ever ordered? Return the "
        "user id and "
        "the highest item price, for the 10 users whose most expensive item is priciest, highest first.",
        "SELECT orders.user_id, MAX(order_items.price) AS top FROM orders JOIN order_items ON "
        "order_items.order_id = orders.order_id "
        "GROUP BY orders.user_id ORDER BY top DESC, orders.user_id LIMIT 10",
        "hard",
        "join group sort limit",
    ),
)

AIRLINE: tuple[SQLQuestion, ...] = (
    _a(
        1,
        "How many flights does the airline operate? Return the count.",
        "SELECT COUNT(*) FROM flights",
        "easy",
        "aggregate",
    ),
    _a(
        2,
        "Which flights depart from JFK? Return the flight numbers and destinations.",
        "SELECT flight_number, destination FROM flights WHERE origin = 'JFK'",
        "easy",
        "filter",
    ),
    _a(
        3,
        "How many users hold each membership level? Return the membership and the number of users.",
        "SELECT membership, COUNT(*) FROM users GROUP BY membership",
        "easy",
        "group",
    ),
    _a(
        4,
        "Which flights are scheduled to depart at or after 20:00? Return the flight number, origin, "
        "destination and "
        "scheduled departure time, latest departure first (ties by flight number).",
        "SELECT flight_number, origin, destination, scheduled_departure_time_est FROM flights "
        "WHERE scheduled_departure_time_est >= '20:00:00' ORDER BY scheduled_departure_time_est DESC, "
        "flight_number",
        "easy",
        "filter sort date",
    ),
    _a(
        5,
        "How many scheduled flights land on the day after they depart? Return the count.",
        "SELECT COUNT(*) FROM flights WHERE arrival_day_offset = 1",
        "easy",
        "filter aggregate",
    ),
    _a(
        6,
        "How many users were born before 1960? Return the count.",
        "SELECT COUNT(*) FROM users WHERE dob < '1960-01-01'",
        "easy",
        "filter date aggregate",
    ),
    _a(
        7,
        "How many flight dates were cancelled? Return the count.",
        "SELECT COUNT(*) FROM flight_dates WHERE status = 'cancelled'",
        "easy",
        "filter aggregate",
    ),
    _a(
        8,
        "How many reservations are there per cabin? Return the cabin and the number of reservations.",
        "SELECT cabin, COUNT(*) FROM reservations GROUP BY cabin",
        "easy",
        "group",
    ),
    _a(
        9,
        "Which routes (origin and destination of a flight) have the most flights? Return the origin, "
        "destination and "
        "number of flights for routes with at least 2 flights, most flights first (ties by origin, then "
        "destination).",
        "SELECT origin, destination, COUNT(*) AS flights FROM flights GROUP BY origin, destination HAVING "
        "COUNT(*) >= 2 "
        "ORDER BY flights DESC, origin, destination",
        "medium",
        "group having sort",
    ),
    _a(
        10,
        "What is the average business-class price of flights still open for booking on 2024-05-20, per "
        "origin airport? "
        "Return the origin and the average price rounded to 2 decimal places.",
        "SELECT flights.origin, ROUND(AVG(flight_cabins.price), 2) FROM flight_cabins "
        "JOIN flights ON flights.flight_number = flight_cabins.flight_number "
        "WHERE flight_cabins.flight_date = '2024-05-20' AND flight_cabins.cabin = 'business' GROUP BY "
        "flights.origin",
        "medium",
        "join filter group date",
    ),
    _a(
        11,
        "How many passengers are on reservations of each membership level of the booking user? Return the "
        "membership "
        "and the number of passengers.",
        "SELECT users.membership, COUNT(*) FROM reservation_passengers "
        "JOIN reservations ON reservations.reservation_id = reservation_passengers.reservation_id "
        "JOIN users ON users.user_id = reservations.user_id GROUP BY users.membership",
        "medium",
        "join group",
    ),
    _a(
        12,
        "How many reservations were created in the first week of May 2024 (May 1 to May 7 inclusive)? "
        "Return the count.",
        "SELECT COUNT(*) FROM reservations WHERE created_at >= '2024-05-01' AND created_at < '2024-05-08'",
        "medium",
        "filter date aggregate",
    ),
    _a(
        13,
        "What is the total amount paid for reservations, per payment method source? Return the source and "
        "the total.",
        "SELECT payment_methods.source, SUM(reservation_payments.amount) FROM reservation_payments "
        "JOIN payment_methods ON payment_methods.payment_method_id = reservation_payments.payment_method_id "
        "GROUP BY payment_methods.source",
        "medium",
        "join group",
    ),
    _a(
        14,
        "Which users have more saved passengers than any other user? Return the user id and the number of "
        "saved "
        "passengers (all users tied for the maximum).",
        "WITH saved AS (SELECT user_id, COUNT(*) AS passengers FROM saved_passengers GROUP BY user_id) "
        "SELECT user_id, passengers FROM saved WHERE passengers = (SELECT MAX(passengers) FROM saved)",
        "medium",
        "cte subquery group",
    ),
    _a(
        15,
        "Which users have no reservation at all? Return how many such users there are.",
        "SELECT COUNT(*) FROM users LEFT JOIN reservations ON reservations.user_id = users.user_id "
        "WHERE reservations.reservation_id IS NULL",
        "medium",
        "left_join null aggregate",
    ),
    _a(
        16,
        "What share of reservations has travel insurance, per flight type? Return the flight type and the "
        "percentage "
        "of its reservations with insurance, rounded to 1 decimal place.",
        "SELECT flight_type, ROUND(100.0 * SUM(CASE WHEN insurance = 'yes' THEN 1 ELSE 0 END) / COUNT(*), 1) "
        "FROM reservations GROUP BY flight_type",
        "medium",
        "case group",
    ),
    _a(
        17,
        "Which landed flights departed more than 28 minutes after their scheduled time? Return the flight "
        "number, the "
        "date and the delay in whole minutes, largest delay first (ties by flight number, then date).",
        f"SELECT d.flight_number, d.flight_date, CAST({_DELAY} AS INTEGER) AS delay FROM flight_dates d "
        "JOIN flights f ON f.flight_number = d.flight_number "
        f"WHERE d.status = 'landed' AND {_DELAY} > 28 ORDER BY delay DESC, d.flight_number, d.flight_date",
        "hard",
        "date join filter sort",
        sqlite=f"SELECT d.flight_number, d.flight_date, CAST({_SQLITE_DELAY} AS INTEGER) AS delay FROM "
        "flight_dates d "
        "JOIN flights f ON f.flight_number = d.flight_number "
        f"WHERE d.status = 'landed' AND {_SQLITE_DELAY} > 28 ORDER BY delay DESC, d.flight_number, "
        "d.flight_date",
    ),
    _a(
        18,
        "Which flights were cancelled on the most dates? Return the flight number and the number of "
        "cancelled dates "
        "(all flights tied for the maximum).",
        "WITH cancelled AS (SELECT flight_number, COUNT(*) AS dates FROM flight_dates WHERE status = "
        "'cancelled' "
        "GROUP BY flight_number) SELECT flight_number, dates FROM cancelled WHERE dates = (SELECT "
        "MAX(dates) FROM cancelled)",
        "hard",
        "cte subquery filter group",
    ),
    _a(
        19,
        "For each cabin, which reservation paid the most in total? Return the cabin, the reservation id and "
        "the "
        "amount (every reservation tied for first place in its cabin).",
        "WITH paid AS (SELECT reservations.cabin, reservations.reservation_id, "
        "SUM(reservation_payments.amount) AS amount, "
        "RANK() OVER (PARTITION BY reservations.cabin ORDER BY SUM(reservation_payments.amount) DESC) AS "
        "place "
        "FROM reservations JOIN reservation_payments ON reservation_payments.reservation_id = "
        "reservations.reservation_id "
        "GROUP BY reservations.cabin, reservations.reservation_id) SELECT cabin, reservation_id, amount "
        "FROM paid WHERE place = 1",
        "hard",
        "window cte join group",
    ),
    _a(
        20,
        "How many reservations were created on each day of the first 5 days of May 2024? Return the date "
        "and the "
        "number of reservations, by date.",
        "SELECT CAST(created_at AS DATE) AS day, COUNT(*) FROM reservations WHERE created_at >= '2024-05-01' "
        "AND created_at < '2024-05-06' GROUP BY day ORDER BY day",
        "hard",
        "date group sort",
        sqlite="SELECT DATE(created_at) AS day, COUNT(*) FROM reservations WHERE created_at >= '2024-05-01' "
        "AND created_at < '2024-05-06' GROUP BY day ORDER BY day",
    ),
    _a(
        21,
        "Which reservation legs were booked on a flight date that was later cancelled? Return the "
        "reservation id, "
        "flight number and flight date.",
        "SELECT rf.reservation_id, rf.flight_number, rf.flight_date FROM reservation_flights rf "
        "JOIN flight_dates d ON d.flight_number = rf.flight_number AND d.flight_date = rf.flight_date "
        "WHERE d.status = 'cancelled'",
        "hard",
        "join filter",
    ),
    _a(
        22,
        "For users with gold membership, what is the average number of passengers per reservation? Return "
        "the average "
        "rounded to 2 decimal places.",
        "SELECT ROUND(AVG(passengers), 2) FROM (SELECT reservations.reservation_id, COUNT(*) AS passengers "
        "FROM reservations "
        "JOIN users ON users.user_id = reservations.user_id "
        "JOIN reservation_passengers ON reservation_passengers.reservation_id = reservations.reservation_id "
        "WHERE users.membership = 'gold' GROUP BY reservations.reservation_id) AS counts",
        "hard",
        "subquery join group",
    ),
    _a(
        23,
        "Which airports have more departing than arriving scheduled flights? Return the airport code and "
        "both numbers.",
        "WITH departures AS (SELECT origin AS airport, COUNT(*) AS departing FROM flights GROUP BY origin), "
        "arrivals AS (SELECT destination AS airport, COUNT(*) AS arriving FROM flights GROUP BY destination) "
        "SELECT departures.airport, departing, arriving FROM departures JOIN arrivals ON arrivals.airport = "
        "departures.airport "
        "WHERE departing > arriving",
        "hard",
        "cte join group",
    ),
)

QUESTIONS: tuple[SQLQuestion, ...] = RETAIL + AIRLINE
