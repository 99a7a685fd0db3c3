"""The SQL env's datasets: the bundled databases and their questions, and users' own files.

Chinook (`chinook.py`) and the tau2 retail/airline databases (`tau2.py`) are defined engine-neutrally
(`schema.py`) and built once per engine into a cache (`build.py`); their questions with gold SQL are
`tasks_chinook.py` and `tasks_tau2.py` (`questions.py` is the unit), checked by `validate.py`;
`catalog.py` says which questions and databases an env uses; `byo.py` reads Spider/BIRD files.
"""
