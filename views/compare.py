"""Compare: two to four listings side by side (``/compare?ids=A,B,C``), each row's best value marked, the distances
between them and a CSV of it all. The work is :mod:`components.compare`'s."""

from __future__ import annotations

import streamlit as st

from components.compare import render_page

st.title("Compare listings")
render_page()
