"""The web Inbox and Runs pages (C5): `pages.py` serves them; index.html, app.js and
app.css are this package's data."""
