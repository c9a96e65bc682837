"""Fixtures shared by the test modules: the dashboard under AppTest, and the dashboard in a real browser."""

pytest_plugins = ["tests.dashboard_support", "tests.browser_support"]
