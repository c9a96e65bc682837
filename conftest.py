"""Fixtures shared by the test modules: the dashboard under AppTest, the dashboard in a real browser, the webhook
service and its receiver."""

pytest_plugins = ["tests.dashboard_support", "tests.browser_support", "tests.webhook_support"]
