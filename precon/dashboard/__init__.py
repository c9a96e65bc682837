"""What the dashboard's pages compute, without Streamlit: the pages (``views/``) and their pieces (``components/``)
draw what these answer, and tests check them without a browser.

- the filters a page shares (:mod:`.filter_state`), the words it shows them in (:mod:`.labels`), a page of results
  against any deployment (:mod:`.listing_search`, :mod:`.ordering`), a listing's own checks
  (:mod:`.listing_checks`, :mod:`.unit_marks`, :mod:`.completion`);
- the Changes and Market pages (:mod:`.market_changes`, :mod:`.market_view`, :mod:`.history_freshness`), the
  Status page (:mod:`.delivery_health`);
- what a person keeps (:mod:`.saved_searches`, :mod:`.compare_lists`) and may do (:mod:`.access`).

It reaches the service only through the typed client (:mod:`precon.client`), which knows nothing of it.
"""
