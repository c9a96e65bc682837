"""The service's error answers, shaped as the error table of docs/api.md settles them."""

from __future__ import annotations

from typing import Any

FORBIDDEN = "Forbidden"
NO_DATA_PRODUCT = "No data product found. Please contact your data provider"
BLANK_PROFILE_ID = "Id cannnot be blank"  # spelled so by the production service


class ApiError(Exception):
    """An answer other than 200: its status, its message, and headers to add (``Retry-After``)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.body = body
        """A body that replaces the usual ``{"requestId", "message"}`` one."""

    def payload(self, request_id: str) -> dict[str, Any]:
        if self.body is not None:
            return self.body
        return {"requestId": request_id, "message": self.message}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def forbidden() -> ApiError:
    return ApiError(403, FORBIDDEN)


def no_data_product() -> ApiError:
    return ApiError(403, NO_DATA_PRODUCT)


def blank_profile_id() -> ApiError:
    return ApiError(400, BLANK_PROFILE_ID, body={"error": BLANK_PROFILE_ID})


def server_error_body(path: str) -> dict[str, str]:
    """The production service's 500 body: ``Error 500`` on search_profiles, ``Error: 500`` elsewhere."""
    return {"message": "Error 500" if path.rstrip("/").endswith("search_profiles") else "Error: 500"}
