"""Reusable Streamlit pieces of the dashboard: the API connection, tables, maps, filters and charts."""
