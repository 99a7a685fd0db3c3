-- A small bookshop database for the bring-your-own (Spider/BIRD format) tests; written for gfcr.
CREATE TABLE author (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE book (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES author (author_id),
    year INTEGER,
    price REAL
);
CREATE TABLE sale (sale_id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES book (book_id), quantity INTEGER, sold_on TEXT);
INSERT INTO author VALUES (1, 'Ada Quill', 'UK'), (2, 'Bo Lindqvist', 'Sweden'), (3, 'Chidi Okafor', 'Nigeria');
INSERT INTO book VALUES
    (1, 'Lanterns', 1, 1999, 12.5), (2, 'The Salt Road', 1, 2004, 15.0), (3, 'Winter Grammar', 2, 2011, 9.99),
    (4, 'Harmattan', 3, 2018, 20.0), (5, 'Small Hours', 3, 2021, 18.25);
INSERT INTO sale VALUES
    (1, 1, 3, '2023-01-05'), (2, 2, 1, '2023-01-09'), (3, 4, 5, '2023-02-11'), (4, 4, 2, '2023-03-01'),
    (5, 5, 4, '2023-03-15'), (6, 3, 1, '2023-03-20');
