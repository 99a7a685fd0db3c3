"""Questions over Chinook with gold SQL, written for gfcr (Apache-2.0 like the rest of gfcr).

Each question says exactly which columns to return; when it asks for an order, the gold query's
ORDER BY is total (ties broken explicitly), which `gfcr.envs.sql.data.validate` checks.
"""

from __future__ import annotations

from gfcr.envs.sql.data.questions import Difficulty, SQLQuestion


def _q(
    number: int, question: str, sql: str, difficulty: Difficulty, features: str, **dialect_sql: str
) -> SQLQuestion:
    return SQLQuestion(
        f"chinook/{number:03d}", "chinook", question, sql, difficulty, tuple(features.split()), dialect_sql
    )  # type: ignore[arg-type]


_YEAR = "EXTRACT(YEAR FROM {0})"
_SQLITE_YEAR = "CAST(strftime('%Y', {0}) AS INTEGER)"
_MONTH = "EXTRACT(MONTH FROM {0})"
_SQLITE_MONTH = "CAST(strftime('%m', {0}) AS INTEGER)"


def _y(column: str, sqlite: bool = False) -> str:
    return (_SQLITE_YEAR if sqlite else _YEAR).format(column)


def _m(column: str, sqlite: bool = False) -> str:
    return (_SQLITE_MONTH if sqlite else _MONTH).format(column)


QUESTIONS: tuple[SQLQuestion, ...] = (
    # -- easy: one table, filters, sorting, simple aggregates -------------------------------------
    _q(
        1,
        "How many tracks are in the store? Return the count.",
        "SELECT COUNT(*) FROM Track",
        "easy",
        "aggregate",
    ),
    _q(2, "List the names of all media types.", "SELECT Name FROM MediaType", "easy", "filter"),
    _q(
        3,
        "Which customers live in Brazil? Return their first and last names.",
        "SELECT FirstName, LastName FROM Customer WHERE Country = 'Brazil'",
        "easy",
        "filter",
    ),
    _q(
        4,
        "How many customers are there in each country? Return the country and the number of customers, "
        "the country with the most customers first (ties in alphabetical order of country).",
        "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country ORDER BY customers DESC, "
        "Country",
        "easy",
        "group sort",
    ),
    _q(
        5,
        "What is the total playing time of all tracks, in hours, rounded to 2 decimal places?",
        "SELECT ROUND(SUM(Milliseconds) / 3600000.0, 2) FROM Track",
        "easy",
        "aggregate",
    ),
    _q(
        6,
        "How many tracks cost more than 0.99? Return the count.",
        "SELECT COUNT(*) FROM Track WHERE UnitPrice > 0.99",
        "easy",
        "filter aggregate",
    ),
    _q(
        7,
        "List the names and lengths in milliseconds of the 5 longest tracks, longest first.",
        "SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC LIMIT 5",
        "easy",
        "sort limit",
    ),
    _q(
        8,
        "How many invoices were billed to the USA? Return the count.",
        "SELECT COUNT(*) FROM Invoice WHERE BillingCountry = 'USA'",
        "easy",
        "filter aggregate",
    ),
    _q(
        9,
        "What is the average invoice total, rounded to 2 decimal places?",
        "SELECT ROUND(AVG(Total), 2) FROM Invoice",
        "easy",
        "aggregate",
    ),
    _q(
        10,
        "How many tracks have no composer recorded? Return the count.",
        "SELECT COUNT(*) FROM Track WHERE Composer IS NULL",
        "easy",
        "null aggregate",
    ),
    _q(
        11,
        "How many different countries have invoices been billed to? Return the count.",
        "SELECT COUNT(DISTINCT BillingCountry) FROM Invoice",
        "easy",
        "distinct aggregate",
    ),
    _q(
        12,
        "Which employees were hired before 2003? Return their first and last names and hire dates, earliest "
        "hire first.",
        "SELECT FirstName, LastName, HireDate FROM Employee WHERE HireDate < '2003-01-01' ORDER BY HireDate",
        "easy",
        "filter date sort",
    ),
    _q(
        13,
        "List the names of all playlists in alphabetical order (a name that occurs twice is listed twice).",
        "SELECT Name FROM Playlist ORDER BY Name",
        "easy",
        "sort",
    ),
    _q(
        14,
        "Which customers work for a company (their company is recorded)? Return their first name, last name "
        "and company.",
        "SELECT FirstName, LastName, Company FROM Customer WHERE Company IS NOT NULL",
        "easy",
        "null filter",
    ),
    _q(
        15,
        "Which tracks have a name containing the word 'Love' (case-sensitive)? Return the track names.",
        "SELECT Name FROM Track WHERE STRPOS(Name, 'Love') > 0",
        "easy",
        "string filter",
        sqlite="SELECT Name FROM Track WHERE INSTR(Name, 'Love') > 0",
    ),
    _q(
        16,
        "What are the shortest and the longest track lengths in milliseconds? Return both numbers.",
        "SELECT MIN(Milliseconds), MAX(Milliseconds) FROM Track",
        "easy",
        "aggregate",
    ),
    _q(
        17,
        "Which employees have the title 'Sales Support Agent'? Return their first names, last names and "
        "emails.",
        "SELECT FirstName, LastName, Email FROM Employee WHERE Title = 'Sales Support Agent'",
        "easy",
        "filter",
    ),
    # -- medium: joins, grouping, HAVING -----------------------------------------------------------
    _q(
        18,
        "List the titles of the albums by the artist 'AC/DC'.",
        "SELECT Album.Title FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId WHERE Artist.Name = "
        "'AC/DC'",
        "medium",
        "join filter",
    ),
    _q(
        19,
        "Which artists have at least 5 albums? Return the artist name and the number of albums, "
        "most albums first (ties by artist name).",
        "SELECT Artist.Name, COUNT(*) AS albums FROM Artist JOIN Album ON Album.ArtistId = Artist.ArtistId "
        "GROUP BY Artist.ArtistId, Artist.Name HAVING COUNT(*) >= 5 ORDER BY albums DESC, Artist.Name",
        "medium",
        "join group having sort",
    ),
    _q(
        20,
        "How many tracks does each genre have? Return the genre name and the count, largest first (ties by "
        "genre name).",
        "SELECT Genre.Name, COUNT(*) AS tracks FROM Track JOIN Genre ON Track.GenreId = Genre.GenreId "
        "GROUP BY Genre.GenreId, Genre.Name ORDER BY tracks DESC, Genre.Name",
        "medium",
        "join group sort",
    ),
    _q(
        21,
        "Which 5 billing countries have the highest total sales? Return the country and its total sales, "
        "highest first.",
        "SELECT BillingCountry, SUM(Total) AS sales FROM Invoice GROUP BY BillingCountry ORDER BY sales "
        "DESC LIMIT 5",
        "medium",
        "group sort limit",
    ),
    _q(
        22,
        "For each media type, how many tracks are there and what is their average length in seconds "
        "(rounded to 1 decimal place)? Return the media type name, the count and the average.",
        "SELECT MediaType.Name, COUNT(*), ROUND(AVG(Track.Milliseconds) / 1000.0, 1) FROM Track "
        "JOIN MediaType ON Track.MediaTypeId = MediaType.MediaTypeId GROUP BY MediaType.MediaTypeId, "
        "MediaType.Name",
        "medium",
        "join group",
    ),
    _q(
        23,
        "Which albums have more than 25 tracks? Return the album title and its number of tracks.",
        "SELECT Album.Title, COUNT(*) FROM Album JOIN Track ON Track.AlbumId = Album.AlbumId "
        "GROUP BY Album.AlbumId, Album.Title HAVING COUNT(*) > 25",
        "medium",
        "join group having",
    ),
    _q(
        24,
        "Which artists have at least one track in the 'Jazz' genre? Return each artist's name once.",
        "SELECT DISTINCT Artist.Name FROM Artist JOIN Album ON Album.ArtistId = Artist.ArtistId "
        "JOIN Track ON Track.AlbumId = Album.AlbumId JOIN Genre ON Genre.GenreId = Track.GenreId WHERE "
        "Genre.Name = 'Jazz'",
        "medium",
        "join distinct filter",
    ),
    _q(
        25,
        "Which playlists contain the track 'Balls to the Wall'? Return the playlist ids and names.",
        "SELECT Playlist.PlaylistId, Playlist.Name FROM Playlist "
        "JOIN PlaylistTrack ON PlaylistTrack.PlaylistId = Playlist.PlaylistId "
        "JOIN Track ON Track.TrackId = PlaylistTrack.TrackId WHERE Track.Name = 'Balls to the Wall'",
        "medium",
        "join filter",
    ),
    _q(
        26,
        "List every employee with the first and last name of the person they report to. "
        "Return the employee's first name, last name, and the manager's first and last name "
        "(NULL for the employee who reports to nobody).",
        "SELECT e.FirstName, e.LastName, m.FirstName, m.LastName FROM Employee e LEFT JOIN Employee m ON "
        "e.ReportsTo = m.EmployeeId",
        "medium",
        "self_join left_join null",
    ),
    _q(
        27,
        "What is the total revenue (unit price times quantity of every invoice line) per genre? "
        "Return the genre name and the revenue, highest first (ties by genre name).",
        "SELECT Genre.Name, SUM(InvoiceLine.UnitPrice * InvoiceLine.Quantity) AS revenue FROM InvoiceLine "
        "JOIN Track ON Track.TrackId = InvoiceLine.TrackId JOIN Genre ON Genre.GenreId = Track.GenreId "
        "GROUP BY Genre.GenreId, Genre.Name ORDER BY revenue DESC, Genre.Name",
        "medium",
        "join group sort",
    ),
    _q(
        28,
        "How many customers does each sales support agent look after? Return the agent's first and last name "
        "and the number of customers.",
        "SELECT Employee.FirstName, Employee.LastName, COUNT(*) FROM Employee "
        "JOIN Customer ON Customer.SupportRepId = Employee.EmployeeId GROUP BY Employee.EmployeeId, "
        "Employee.FirstName, Employee.LastName",
        "medium",
        "join group",
    ),
    _q(
        29,
        "What are the total sales made through the customers of each employee? Return the employee's first "
        "name, "
        "last name and the sum of their customers' invoice totals, highest first.",
        "SELECT Employee.FirstName, Employee.LastName, SUM(Invoice.Total) AS sales FROM Employee "
        "JOIN Customer ON Customer.SupportRepId = Employee.EmployeeId JOIN Invoice ON Invoice.CustomerId = "
        "Customer.CustomerId "
        "GROUP BY Employee.EmployeeId, Employee.FirstName, Employee.LastName ORDER BY sales DESC",
        "medium",
        "join group sort",
    ),
    _q(
        30,
        "Which artists have no album in the store? Return how many such artists there are.",
        "SELECT COUNT(*) FROM Artist LEFT JOIN Album ON Album.ArtistId = Artist.ArtistId WHERE "
        "Album.AlbumId IS NULL",
        "medium",
        "left_join null aggregate",
    ),
    _q(
        31,
        "List the names of the tracks on the album 'Let There Be Rock' with their genre names.",
        "SELECT Track.Name, Genre.Name FROM Track JOIN Album ON Album.AlbumId = Track.AlbumId "
        "JOIN Genre ON Genre.GenreId = Track.GenreId WHERE Album.Title = 'Let There Be Rock'",
        "medium",
        "join filter",
    ),
    _q(
        32,
        "How many tracks are in each playlist? Return the playlist id, name and the number of tracks, "
        "including playlists with no tracks (count 0), ordered by playlist id.",
        "SELECT Playlist.PlaylistId, Playlist.Name, COUNT(PlaylistTrack.TrackId) FROM Playlist "
        "LEFT JOIN PlaylistTrack ON PlaylistTrack.PlaylistId = Playlist.PlaylistId "
        "GROUP BY Playlist.PlaylistId, Playlist.Name ORDER BY Playlist.PlaylistId",
        "medium",
        "left_join group sort",
    ),
    _q(
        33,
        "How many invoices and how much revenue were there in each year? Return the year, the number of "
        "invoices "
        "and the total, by year.",
        f"SELECT {_y('InvoiceDate')} AS year, COUNT(*), SUM(Total) FROM Invoice GROUP BY year ORDER BY year",
        "medium",
        "date group sort",
        sqlite=f"SELECT {_y('InvoiceDate', True)} AS year, COUNT(*), SUM(Total) FROM Invoice GROUP BY year "
        "ORDER BY year",
    ),
    _q(
        34,
        "What was the total revenue in each month of 2009? Return the month number (1-12) and the total, by "
        "month.",
        f"SELECT {_m('InvoiceDate')} AS month, SUM(Total) FROM Invoice WHERE InvoiceDate >= '2009-01-01' "
        "AND InvoiceDate < '2010-01-01' GROUP BY month ORDER BY month",
        "medium",
        "date group sort",
        sqlite=f"SELECT {_m('InvoiceDate', True)} AS month, SUM(Total) FROM Invoice WHERE InvoiceDate >= "
        "'2009-01-01' "
        "AND InvoiceDate < '2010-01-01' GROUP BY month ORDER BY month",
    ),
    _q(
        35,
        "Which customers are looked after by Jane Peacock? Return the customers' first and last names.",
        "SELECT Customer.FirstName, Customer.LastName FROM Customer JOIN Employee ON Customer.SupportRepId "
        "= Employee.EmployeeId "
        "WHERE Employee.FirstName = 'Jane' AND Employee.LastName = 'Peacock'",
        "medium",
        "join filter",
    ),
    _q(
        36,
        "Classify tracks by length: 'short' under 3 minutes, 'medium' from 3 up to (not including) 6 "
        "minutes, "
        "'long' otherwise. Return each class and its number of tracks.",
        "SELECT CASE WHEN Milliseconds < 180000 THEN 'short' WHEN Milliseconds < 360000 THEN 'medium' ELSE "
        "'long' END AS size, "
        "COUNT(*) FROM Track GROUP BY size",
        "medium",
        "case group",
    ),
    _q(
        37,
        "Which countries have both customers and employees? Return the country names.",
        "SELECT Country FROM Customer INTERSECT SELECT Country FROM Employee",
        "medium",
        "set_op",
    ),
    # -- hard: subqueries, CTEs, window functions, dates -------------------------------------------
    _q(
        38,
        "Which customer has spent the most in total? Return the customer's first name, last name and total "
        "spent "
        "(all customers if several tie).",
        "SELECT Customer.FirstName, Customer.LastName, SUM(Invoice.Total) AS spent FROM Customer "
        "JOIN Invoice ON Invoice.CustomerId = Customer.CustomerId GROUP BY Customer.CustomerId, "
        "Customer.FirstName, "
        "Customer.LastName HAVING ROUND(SUM(Invoice.Total), 2) = (SELECT MAX(total) FROM (SELECT "
        "ROUND(SUM(Total), 2) AS total FROM Invoice "
        "GROUP BY CustomerId) AS totals)",
        "hard",
        "join group having subquery",
    ),
    _q(
        39,
        "Which tracks were sold in the largest number of invoice lines? Return the track name and the "
        "number of "
        "invoice lines (all tracks that tie for the maximum).",
        "WITH sold AS (SELECT TrackId, COUNT(*) AS lines FROM InvoiceLine GROUP BY TrackId) "
        "SELECT Track.Name, sold.lines FROM sold JOIN Track ON Track.TrackId = sold.TrackId "
        "WHERE sold.lines = (SELECT MAX(lines) FROM sold)",
        "hard",
        "cte subquery join aggregate",
    ),
    _q(
        40,
        "Which artists' tracks are on average longer than the average track? Return the artist name and "
        "their "
        "average track length in milliseconds rounded to the nearest integer, longest first (ties by name).",
        "SELECT Artist.Name, ROUND(AVG(Track.Milliseconds)) AS average FROM Artist JOIN Album ON "
        "Album.ArtistId = Artist.ArtistId "
        "JOIN Track ON Track.AlbumId = Album.AlbumId GROUP BY Artist.ArtistId, Artist.Name "
        "HAVING AVG(Track.Milliseconds) > (SELECT AVG(Milliseconds) FROM Track) ORDER BY average DESC, "
        "Artist.Name",
        "hard",
        "join group having subquery sort",
    ),
    _q(
        41,
        "For each country, which customers spent the most among the customers of that country? Return the "
        "country, "
        "the customer's first and last name and the amount (every customer who ties for first place).",
        "WITH spent AS (SELECT Customer.CustomerId, Customer.Country, Customer.FirstName, Customer.LastName, "
        "ROUND(SUM(Invoice.Total), 2) AS total, RANK() OVER (PARTITION BY Customer.Country ORDER BY "
        "ROUND(SUM(Invoice.Total), 2) DESC) AS place "
        "FROM Customer JOIN Invoice ON Invoice.CustomerId = Customer.CustomerId "
        "GROUP BY Customer.CustomerId, Customer.Country, Customer.FirstName, Customer.LastName) "
        "SELECT Country, FirstName, LastName, total FROM spent WHERE place = 1",
        "hard",
        "window cte join group",
    ),
    _q(
        42,
        "List the invoices of customer 1 with a running total: return the invoice id, its date, its total "
        "and the "
        "cumulative total of that customer's invoices up to and including it, in date order.",
        "SELECT InvoiceId, InvoiceDate, Total, SUM(Total) OVER (ORDER BY InvoiceDate, InvoiceId) AS "
        "running_total "
        "FROM Invoice WHERE CustomerId = 1 ORDER BY InvoiceDate, InvoiceId",
        "hard",
        "window date sort",
    ),
    _q(
        43,
        "What share of all tracks does each media type have? Return the media type name and the percentage "
        "of tracks, "
        "rounded to 2 decimal places.",
        "SELECT MediaType.Name, ROUND(100.0 * COUNT(*) / (SELECT COUNT(*) FROM Track), 2) FROM Track "
        "JOIN MediaType ON MediaType.MediaTypeId = Track.MediaTypeId GROUP BY MediaType.MediaTypeId, "
        "MediaType.Name",
        "hard",
        "join group subquery",
    ),
    _q(
        44,
        "Which customers spent more than the average customer? Return their first and last names and total "
        "spent, "
        "highest first (ties by customer id).",
        "WITH spent AS (SELECT CustomerId, ROUND(SUM(Total), 2) AS total FROM Invoice GROUP BY CustomerId) "
        "SELECT Customer.FirstName, Customer.LastName, spent.total FROM spent JOIN Customer ON "
        "Customer.CustomerId = spent.CustomerId "
        "WHERE spent.total > (SELECT AVG(total) FROM spent) ORDER BY spent.total DESC, Customer.CustomerId",
        "hard",
        "cte subquery join sort",
    ),
    _q(
        45,
        "What was the change in total sales from each year to the next? Return the year, that year's total "
        "and the "
        "difference from the previous year's total (NULL for the first year), by year.",
        f"WITH yearly AS (SELECT {_y('InvoiceDate')} AS year, SUM(Total) AS total FROM Invoice GROUP BY "
        "year) "
        "SELECT year, total, total - LAG(total) OVER (ORDER BY year) FROM yearly ORDER BY year",
        "hard",
        "window cte date sort",
        sqlite=f"WITH yearly AS (SELECT {_y('InvoiceDate', True)} AS year, SUM(Total) AS total FROM Invoice "
        "GROUP BY year) "
        "SELECT year, total, total - LAG(total) OVER (ORDER BY year) FROM yearly ORDER BY year",
    ),
    _q(
        46,
        "In each country, which genre sold the most units? Return the billing country, the genre name and "
        "the units "
        "sold (all genres that tie for first place in a country).",
        "WITH units AS (SELECT Invoice.BillingCountry AS country, Genre.Name AS genre, "
        "SUM(InvoiceLine.Quantity) AS sold, "
        "RANK() OVER (PARTITION BY Invoice.BillingCountry ORDER BY SUM(InvoiceLine.Quantity) DESC) AS place "
        "FROM InvoiceLine JOIN Invoice ON Invoice.InvoiceId = InvoiceLine.InvoiceId "
        "JOIN Track ON Track.TrackId = InvoiceLine.TrackId JOIN Genre ON Genre.GenreId = Track.GenreId "
        "GROUP BY Invoice.BillingCountry, Genre.Name) SELECT country, genre, sold FROM units WHERE place = 1",
        "hard",
        "window cte join group",
    ),
    _q(
        47,
        "Which tracks appear in more playlists than any other track? Return the track names and the number "
        "of "
        "playlists (all tracks tied for the maximum).",
        "WITH counts AS (SELECT TrackId, COUNT(*) AS playlists FROM PlaylistTrack GROUP BY TrackId) "
        "SELECT Track.Name, counts.playlists FROM counts JOIN Track ON Track.TrackId = counts.TrackId "
        "WHERE counts.playlists = (SELECT MAX(playlists) FROM counts)",
        "hard",
        "cte subquery join",
    ),
    _q(
        48,
        "Which customers have never bought a track of the 'Metal' genre? Return their first and last names.",
        "SELECT FirstName, LastName FROM Customer c WHERE NOT EXISTS (SELECT 1 FROM Invoice i "
        "JOIN InvoiceLine l ON l.InvoiceId = i.InvoiceId JOIN Track t ON t.TrackId = l.TrackId "
        "JOIN Genre g ON g.GenreId = t.GenreId WHERE i.CustomerId = c.CustomerId AND g.Name = 'Metal')",
        "hard",
        "correlated subquery join",
    ),
    _q(
        49,
        "How many days old was each employee when hired? Return the first name, last name and the age in "
        "days at "
        "the hire date, youngest at hire first.",
        "SELECT FirstName, LastName, CAST(HireDate AS DATE) - CAST(BirthDate AS DATE) AS days FROM Employee "
        "ORDER BY days",
        "hard",
        "date sort",
        sqlite="SELECT FirstName, LastName, CAST(julianday(HireDate) - julianday(BirthDate) AS INTEGER) AS "
        "days "
        "FROM Employee ORDER BY days",
    ),
    _q(
        50,
        "Which albums have tracks of more than one genre? Return the album title and the number of distinct "
        "genres, "
        "most genres first (ties by title).",
        "SELECT Album.Title, COUNT(DISTINCT Track.GenreId) AS genres FROM Album JOIN Track ON Track.AlbumId "
        "= Album.AlbumId "
        "GROUP BY Album.AlbumId, Album.Title HAVING COUNT(DISTINCT Track.GenreId) > 1 ORDER BY genres DESC, "
        "Album.Title",
        "hard",
        "join group having distinct sort",
    ),
    _q(
        51,
        "Rank the sales support agents by the total sales of their customers in 2010: return the agent's "
        "last name, "
        "the 2010 total and the rank (1 for the highest; ties share a rank).",
        "SELECT Employee.LastName, SUM(Invoice.Total) AS sales, RANK() OVER (ORDER BY "
        "ROUND(SUM(Invoice.Total), 2) DESC) FROM Employee "
        "JOIN Customer ON Customer.SupportRepId = Employee.EmployeeId JOIN Invoice ON Invoice.CustomerId = "
        "Customer.CustomerId "
        "WHERE Invoice.InvoiceDate >= '2010-01-01' AND Invoice.InvoiceDate < '2011-01-01' "
        "GROUP BY Employee.EmployeeId, Employee.LastName",
        "hard",
        "window join group date",
    ),
    _q(
        52,
        "Which customers placed invoices in every year that has invoices? Return the customer ids.",
        f"SELECT CustomerId FROM Invoice GROUP BY CustomerId HAVING COUNT(DISTINCT {_y('InvoiceDate')}) = "
        f"(SELECT COUNT(DISTINCT {_y('InvoiceDate')}) FROM Invoice)",
        "hard",
        "group having subquery date distinct",
        sqlite=f"SELECT CustomerId FROM Invoice GROUP BY CustomerId HAVING COUNT(DISTINCT "
        f"{_y('InvoiceDate', True)}) = "
        f"(SELECT COUNT(DISTINCT {_y('InvoiceDate', True)}) FROM Invoice)",
    ),
)
