"""The bookmakers the service knows: the code each is stored under, its display name, and
how a season file's columns, The Odds API and a request may spell it."""

from __future__ import annotations

# football-data.co.uk prefix -> (code stored in the service, display name).
# "P" is Pinnacle in the "new leagues" files, "PS" in the main ones.
KNOWN_BOOKMAKERS: dict[str, tuple[str, str]] = {
    "B365": ("B365", "Bet365"),
    "BS": ("BS", "Blue Square"),
    "BW": ("BW", "Bet&Win"),
    "GB": ("GB", "Gamebookers"),
    "IW": ("IW", "Interwetten"),
    "LB": ("LB", "Ladbrokes"),
    "PS": ("PS", "Pinnacle"),
    "P": ("PS", "Pinnacle"),
    "SO": ("SO", "Sporting Odds"),
    "SB": ("SB", "Sportingbet"),
    "SJ": ("SJ", "Stan James"),
    "SY": ("SY", "Stanleybet"),
    "VC": ("VC", "VC Bet"),
    "WH": ("WH", "William Hill"),
    "1XB": ("1XB", "1xBet"),
    "BF": ("BF", "Betfair Sportsbook"),
    "BFE": ("BFE", "Betfair Exchange"),
    "BFD": ("BFD", "Betfred"),
    "BMGM": ("BMGM", "BetMGM"),
    "BV": ("BV", "BetVictor"),
    "CL": ("CL", "Coral"),
}
# Code stored in the service -> display name.
BOOKMAKER_NAMES = dict(KNOWN_BOOKMAKERS.values())
# The Odds API's keys of the bookmakers above -> their codes.
ODDS_API_KEYS = {
    "pinnacle": "PS",
    "williamhill": "WH",
    "betfair_ex_uk": "BFE",
    "betfair_ex_eu": "BFE",
    "betfair_sb_uk": "BF",
    "ladbrokes_uk": "LB",
    "betvictor": "VC",
    "onexbet": "1XB",
    "bet365": "B365",
    "interwetten": "IW",
    "coral": "CL",
}


def display_name(code: str) -> str:
    """A code's display name; an unknown code is its own."""
    return BOOKMAKER_NAMES.get(code, code)


def code_of_odds_api_key(key: str) -> str:
    """The code of The Odds API's ``key``: a known one's, else the key upper-cased."""
    return ODDS_API_KEYS.get(key, key.upper())


# Every known bookmaker's spellings (code, display name) in any letter case -> its code.
_KNOWN = {
    spelling.casefold(): code for code, name in BOOKMAKER_NAMES.items() for spelling in (code, name)
}


def bookmaker_key(name: str) -> str:
    """One key per bookmaker however spelled: a known one's code, else the casefold."""
    folded = name.casefold()
    return _KNOWN.get(folded, folded)


def commission_code(name: str) -> str:
    """How a commission's bookmaker is kept: a known bookmaker's code, whether named by code,
    by name or by The Odds API's key (``betfair_ex_uk``); an unknown one as given, trimmed."""
    name = name.strip()
    folded = name.casefold()
    if folded in ODDS_API_KEYS:
        return ODDS_API_KEYS[folded]
    return _KNOWN.get(folded, name)
