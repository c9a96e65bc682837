"""Precon Explorer: the dashboard. ``streamlit run app.py`` (or ``make run``)."""

from __future__ import annotations

import streamlit as st

from components import api, auth, compare_list
from components.sidebar import render_sidebar

st.set_page_config(page_title="Precon Explorer", page_icon="🏗️", layout="wide")
# The app's layout, in this one place (st.markdown, whose code every page loads anyway: st.html would fetch a module
# of its own on a cold load):
# - narrower side margins than Streamlit's wide layout, so a results table fits a 1280-pixel screen beside the sidebar;
# - the page title near the top (Streamlit's 6rem top padding left ~110 px empty above every title): the header bar,
#   which holds only the menu at its right (toolbarMode minimal), made see-through so the title may sit under it;
# - pills wrap onto a second line in a narrow column instead of being cut off ("Semi…", "Pre Constr…").
LAYOUT_CSS = (
    "<style>"
    "[data-testid='stMainBlockContainer'] {padding-left: 1.5rem; padding-right: 1.5rem; padding-top: 2.5rem;}"
    "[data-testid='stHeader'] {background: transparent;}"
    "[data-testid='stButtonGroup'] > div {flex-wrap: wrap; overflow: visible;}"
    "</style>"
)
st.markdown(LAYOUT_CSS, unsafe_allow_html=True)

# Before anything else: who is signed in (with [auth] configured), or that serving without sign-in is allowed here.
person = auth.gate()
admin = person is None or person.is_admin

# Home is the default page, served at /. A default page still reserves its own pathname without answering at it,
# so Home's is one nobody types, and /home is the same page again, hidden from the navigation.
PAGES = {
    "Explore": [
        st.Page("views/home.py", title="Home", icon=":material/home:", url_path="overview", default=True),
        st.Page("views/home.py", title="Home", icon=":material/home:", url_path="home", visibility="hidden"),
        st.Page("views/search.py", title="Search", icon=":material/search:", url_path="search"),
        st.Page("views/map.py", title="Map", icon=":material/map:", url_path="map"),
        st.Page("views/facets.py", title="Facets", icon=":material/bar_chart:", url_path="facets"),
        st.Page("views/saved.py", title="Saved searches", icon=":material/bookmarks:", url_path="saved"),
        st.Page("views/changes.py", title="Changes", icon=":material/trending_up:", url_path="changes"),
        st.Page("views/market.py", title="Market", icon=":material/monitoring:", url_path="market"),
    ],
    "Records": [
        st.Page("views/listing.py", title="Listing", icon=":material/apartment:", url_path="listing"),
        st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
        st.Page("views/profiles.py", title="Profiles", icon=":material/groups:", url_path="profiles"),
        st.Page("views/profile.py", title="Profile", icon=":material/badge:", url_path="profile"),
    ],
}
# The Admin section for admins (and everyone, without sign-in); for a viewer its pages answer "admins only" at their
# addresses and are not in the navigation.
ADMIN_PAGES = [
    ("views/webhooks.py", "Webhooks", ":material/webhook:", "webhooks"),
    ("views/status.py", "Status", ":material/monitor_heart:", "status"),
]
if admin:
    PAGES["Admin"] = [st.Page(path, title=title, icon=icon, url_path=url) for path, title, icon, url in ADMIN_PAGES]
else:
    PAGES["Explore"] += [
        st.Page(auth.admins_only, title=title, icon=icon, url_path=url, visibility="hidden")
        for _, title, icon, url in ADMIN_PAGES
    ]

page = st.navigation(PAGES, expanded=True)  # every section shown: Admin is not folded under "View more"
auth.render_account(person)
render_sidebar(api.connection)
compare_list.sync()  # the compare list, from the address or the store, on every page
page.run()
