"""Words as search sees them: a text's words, each folded the way the FTS5 ``unicode61 remove_diacritics 2``
tokenizer folds them (case and accents ignored). Shared by the service, which indexes and matches them, and the
dashboard, which matches facet values as the service would."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

WORD = re.compile(r"[^\W_]+")
FTS5_CASE_FOLDS = str.maketrans({"\u00b5": "\u03bc", "\u017f": "s"})
"""Two letters FTS5's case folding maps that ``str.lower`` keeps: the micro sign and the long s."""


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Case- and accent-insensitive form of a word (``Québec`` → ``quebec``), as FTS5's tokenizer makes it:
    lower case and each letter's diacritics removed, nothing else (``Straße``, ``ﬁ``, ``m²`` and ``Ⅻ`` stay as
    they are, where Unicode's compatibility forms would make ``strasse``, ``fi``, ``m2``, ``xii``, which the
    index would then miss). Equal to the tokenizer for Latin
    text (Latin-1 and Latin Extended-A, with the common symbols, checked against it); a few rarer letters
    (Latin Extended-B with two marks, polytonic Greek, Georgian capitals) it folds otherwise."""
    decomposed = unicodedata.normalize("NFD", word.lower().translate(FTS5_CASE_FOLDS))
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def words(text: str) -> list[str]:
    return [fold(w) for w in WORD.findall(text)]
