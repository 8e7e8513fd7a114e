"""The dates a search query names, and whether a chain was told in them.

"What did I tell you on 3 June, 2023?", "what did Maria donate in December 2023?", "what did I say
yesterday?": a question that names a date asks for what was said around it, and neither the
embedding nor the words find that (a conversation seldom spells out its own date; its events carry
it as timestamps). This module reads the dates a query writes, in the languages `athena.text` knows
the stop words of (English, Spanish, French, German, Russian, Chinese, Japanese, Korean; the month
names also in Portuguese and Italian, text/calendar_words.py):

- a day: `2023-06-03`, `03.06.2023`, `6/3/2023` (both June 3 and March 6), `June 3`, `June 3rd,
  2023`, `3 June 2023`, `the 3rd of June`, `3 de junio de 2023`, `3 juin 2023`, `3. Juni 2023`,
  `3 июня 2023`, `2023年6月3日`, `2023년 6월 3일`;
- a month: `June 2023`, `in June`, `during June`, `early June`, `en junio`, `en juin`, `im Juni`,
  `в июне`, `2023年6月`;
- a year: `in 2023`, `en 2023`, `im Jahr 2023`, `в 2023 году`, `2023年`;
- relative to the search's own time: today, yesterday, the day before yesterday, `3 days ago`, this or
  last week, month or year, the weekend, a weekday (the latest on or before today: "on Monday"), in
  each of those languages ("ayer", "la semaine dernière", "letzten Monat", "вчера", "в среду", "上周",
  "先月", "작년", "月曜日").

A bare month name without a day, a year or one of those words before it is not a date ("May I ask",
"June said"). A date without a year stands for that day or month in any year.

A chain *was told in* a period when one of its events' times falls from a day before the period
starts (a query's date is the asker's, timestamps are UTC) to `TOLD_WITHIN_DAYS` after it ends: what
happened on a day is mostly told that day or in the days after it ("last weekend", "yesterday").
ranking.py adds SEARCH_DATE_WEIGHT to the score of a chain told in a period the query names.
"""

from __future__ import annotations

import calendar
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
import regex

from athena.text import latin_language, tokens
from athena_formation.text.calendar_words import MONTH_ABBREVIATIONS, MONTHS

__all__ = ["TOLD_WITHIN_DAYS", "DayRange", "Named", "Period", "query_periods", "told_in", "told_in_each"]

TOLD_WITHIN_DAYS = 7
"""Days after a period in which what happened in it counts as told in it."""


@dataclass(frozen=True)
class Period:
    """A day, a month or a year a query names; `year` None: that day or month of any year."""

    year: int | None
    month: int | None
    day: int | None = None

    def spans(self, years: Sequence[int]) -> list[tuple[date, date]]:
        """The period's first and last day in each of `years` it can fall in (its own year when it has one)."""
        out = []
        for year in [self.year] if self.year is not None else years:
            if self.month is None:
                out.append((date(year, 1, 1), date(year, 12, 31)))
                continue
            last = calendar.monthrange(year, self.month)[1]
            if self.day is None:
                out.append((date(year, self.month, 1), date(year, self.month, last)))
            elif self.day <= last:
                out.append((date(year, self.month, self.day), date(year, self.month, self.day)))
        return out


@dataclass(frozen=True)
class DayRange:
    """Days named relative to the search's time ("yesterday", "last week"), first and last included."""

    first: date
    last: date

    def spans(self, years: Sequence[int]) -> list[tuple[date, date]]:
        return [(self.first, self.last)]


Named = Period | DayRange
"""A period a query names."""

# --- dates as written ------------------------------------------------------------------------------

_MONTH = r"(?P<month>" + "|".join(sorted(map(regex.escape, MONTHS), key=len, reverse=True)) + r")\.?"
_MONTH_NAME = (  # without the abbreviations, which need a day or a year beside them
    r"(?P<month>" + "|".join(sorted(map(regex.escape, set(MONTHS) - MONTH_ABBREVIATIONS), key=len, reverse=True)) + r")"
)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|\.)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_ABSOLUTE = [
    regex.compile(rf"(?<!\d){_YEAR}[-/](?P<month_number>[01]?\d)[-/](?P<day>[0-3]?\d)(?!\d)"),
    regex.compile(rf"(?<![\d.])(?P<day>[0-3]?\d)\.(?P<month_number>[01]?\d)\.{_YEAR}(?!\d)"),
    regex.compile(rf"(?<![\d/])(?P<a>[01]?\d)/(?P<b>[0-3]?\d)/{_YEAR}(?!\d)"),  # month/day or day/month
    regex.compile(
        rf"(?:{_YEAR}\s*[年년]\s*)?(?<!\d)(?P<month_number>[01]?\d)\s*[月월](?:\s*(?P<day>[0-3]?\d)\s*[日일号])?"
    ),
    regex.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?", regex.IGNORECASE),
    regex.compile(rf"\b{_DAY}\s*(?:of\s+|de\s+)?{_MONTH}\b(?:,?\s+(?:de\s+)?{_YEAR}\b)?", regex.IGNORECASE),
    regex.compile(rf"\b{_MONTH}\s*,?\s+(?:de\s+|of\s+)?{_YEAR}\b", regex.IGNORECASE),
    regex.compile(rf"\b(?:in|during|of|early|mid|late|en|im|au\s+mois\s+de|во?)\s+{_MONTH_NAME}\b", regex.IGNORECASE),
    regex.compile(rf"\b(?:in|during|en|im|во?)\s+(?:jahr\s+|l'an\s+|el\s+año\s+)?{_YEAR}\b", regex.IGNORECASE),
    regex.compile(rf"(?<!\d){_YEAR}\s*[年년](?!\s*\d)"),
]

# --- relative to the search's time ---------------------------------------------------------------------

_Resolve = Callable[[date, regex.Match[str]], DayRange | None]


def _days_ago(days: int) -> _Resolve:
    return lambda today, _: DayRange(today - timedelta(days=days), today - timedelta(days=days))


def _week(back: int) -> _Resolve:
    def resolve(today: date, _: regex.Match[str]) -> DayRange:
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=back)
        return DayRange(monday, min(today, monday + timedelta(days=6)))

    return resolve


def _month(back: int) -> _Resolve:
    def resolve(today: date, _: regex.Match[str]) -> DayRange:
        year, month = divmod(today.year * 12 + today.month - 1 - back, 12)
        first = date(year, month + 1, 1)
        return DayRange(first, min(today, first.replace(day=calendar.monthrange(year, month + 1)[1])))

    return resolve


def _weekday(weekday: int) -> _Resolve:
    """The latest such weekday (0: Monday) on or before today."""
    return lambda today, _: _days_ago((today.weekday() - weekday) % 7)(today, _)


def _weekend(today: date, _: regex.Match[str]) -> DayRange:
    """The latest Saturday and Sunday, up to today."""
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    return DayRange(saturday, min(today, saturday + timedelta(days=1)))


_WEEKDAYS = [
    # English, Spanish, French, German, Russian (after в / во, as asked: "в среду"), Chinese, Japanese, Korean
    "monday|lunes|lundi|montag|в понедельник|星期一|周一|礼拜一|月曜日|월요일",
    "tuesday|martes|mardi|dienstag|во вторник|星期二|周二|礼拜二|火曜日|화요일",
    "wednesday|miércoles|mercredi|mittwoch|в среду|星期三|周三|礼拜三|水曜日|수요일",
    "thursday|jueves|jeudi|donnerstag|в четверг|星期四|周四|礼拜四|木曜日|목요일",
    "friday|viernes|vendredi|freitag|в пятницу|星期五|周五|礼拜五|金曜日|금요일",
    "saturday|sábado|samedi|samstag|в субботу|星期六|周六|礼拜六|土曜日|토요일",
    "sunday|domingo|dimanche|sonntag|в воскресенье|星期日|星期天|周日|礼拜天|日曜日|일요일",
]


def _year_back(back: int) -> _Resolve:
    return lambda today, _: DayRange(date(today.year - back, 1, 1), min(today, date(today.year - back, 12, 31)))


def _n_days_ago(today: date, match: regex.Match[str]) -> DayRange | None:
    words = {"a": 1, "one": 1, "two": 2, "three": 3, "a couple of": 2, "a few": 3, "few": 3}
    count = match.group("n").casefold()
    days = int(count) if count.isdigit() else words.get(count)
    if days is None or days > 366:
        return None
    return DayRange(today - timedelta(days=days), today - timedelta(days=days))


def _words(phrases: str) -> regex.Pattern[str]:
    """`|`-separated phrases as whole words (Latin and Cyrillic) or as they stand (CJK, written without
    spaces between words)."""
    alternatives = [
        regex.escape(p).replace(r"\ ", r"\s+")
        if regex.search(r"[\p{Han}\p{Hangul}\p{Hiragana}]", p)
        else r"\b" + regex.escape(p).replace(r"\ ", r"\s+") + r"\b"
        for p in sorted(phrases.split("|"), key=len, reverse=True)
    ]
    return regex.compile("|".join(alternatives), regex.IGNORECASE)


_Relative = tuple[regex.Pattern[str], _Resolve, str | None]
"""A phrase, the days it names, and the one language it is read in (None: any)."""

_RELATIVE: list[_Relative] = [
    (
        _words(
            "the day before yesterday|anteayer|antes de ayer|avant-hier|vorgestern|позавчера|前天|一昨日|おととい|그저께|그제"
        ),
        _days_ago(2),
        None,
    ),
    (_words("yesterday|last night|ayer|anoche|hier soir|gestern|вчера|昨天|昨日|昨晚|어제"), _days_ago(1), None),
    (_words("hier"), _days_ago(1), "fr"),  # French "yesterday", German "here": read in French text only
    (
        _words(
            "today|this morning|this afternoon|this evening|tonight|hoy|esta mañana|esta tarde|esta noche"
            "|aujourd'hui|ce matin|cet après-midi|ce soir|heute|сегодня|今天|今日|오늘"
        ),
        _days_ago(0),
        None,
    ),
    (
        regex.compile(
            r"\b(?P<n>\d{1,3}|a|one|two|three|a couple of|a few|few)\s+days?\s+ago\b"
            r"|\bhace\s+(?P<n>\d{1,3})\s+días\b|\bil\s+y\s+a\s+(?P<n>\d{1,3})\s+jours\b"
            r"|\bvor\s+(?P<n>\d{1,3})\s+tagen\b|\b(?P<n>\d{1,3})\s+(?:день|дня|дней)\s+назад\b"
            r"|(?P<n>\d{1,3})\s*(?:天前|日前|일\s*전)",
            regex.IGNORECASE,
        ),
        _n_days_ago,
        None,
    ),
    (
        _words(
            "last week|past week|la semana pasada|la semaine dernière|la semaine passée|letzte woche"
            "|letzten woche|vergangene woche|на прошлой неделе|上周|上星期|上个星期|先週|지난주|지난 주"
        ),
        _week(1),
        None,
    ),
    (
        _words(
            "this week|esta semana|cette semaine|diese woche|dieser woche|на этой неделе|这周|本周|这个星期|今週|이번 주|이번주"
        ),
        _week(0),
        None,
    ),
    (
        _words(
            "last month|past month|el mes pasado|le mois dernier|le mois passé|letzten monat|letzter monat"
            "|vergangenen monat|в прошлом месяце|上个月|上月|先月|지난달|지난 달"
        ),
        _month(1),
        None,
    ),
    (
        _words(
            "this month|este mes|ce mois-ci|ce mois|diesen monat|dieser monat|в этом месяце|这个月|本月|今月|이번 달|이번달"
        ),
        _month(0),
        None,
    ),
    (
        _words(
            "last year|el año pasado|l'année dernière|l'an dernier|letztes jahr|letzten jahr|в прошлом году|去年|昨年|작년|지난해"
        ),
        _year_back(1),
        None,
    ),
    (_words("this year|este año|cette année|dieses jahr|в этом году|今年|올해"), _year_back(0), None),
    (
        _words(
            "last weekend|this weekend|the weekend|el fin de semana|le week-end|le weekend|am wochenende"
            "|letztes wochenende|на выходных|周末|上周末|週末|주말"
        ),
        _weekend,
        None,
    ),
    *((_words(names), _weekday(day), None) for day, names in enumerate(_WEEKDAYS)),
]


def query_periods(query: str, *, now: datetime | None = None) -> list[Named]:
    """The periods the query names, each once, in order of first mention (empty: it names none).
    `now`: the search's time, for the days named relative to it ("yesterday"); None reads only dates."""
    found: dict[Named, None] = {}
    taken: list[tuple[int, int]] = []  # a day's match is not read again as its month or year

    def free(match: regex.Match[str]) -> bool:
        return not any(start < match.end() and match.start() < end for start, end in taken)

    if now is not None:
        today = now.astimezone(UTC).date()
        language = functools.cache(lambda: latin_language(tokens(query)))
        for pattern, resolve, only_in in _RELATIVE:
            if only_in is not None and language() != only_in:
                continue
            for match in pattern.finditer(query):
                if free(match) and (named := resolve(today, match)) is not None:
                    found.setdefault(named)
                    taken.append(match.span())
    for pattern in _ABSOLUTE:
        for match in pattern.finditer(query):
            periods = _periods(match) if free(match) else []
            for period in periods:
                found.setdefault(period)
            if periods:
                taken.append(match.span())
    return list(found)


def _periods(match: regex.Match[str]) -> list[Period]:
    groups = match.groupdict()
    year = int(groups["year"]) if groups.get("year") else None
    if groups.get("a"):  # 6/3/2023: the month first or the day first, whichever can be
        a, b = int(groups["a"]), int(groups["b"])
        return [p for month, day in ((a, b), (b, a)) if (p := _valid(year, month, day)) is not None]
    if groups.get("month_number"):
        month: int | None = int(groups["month_number"])
    elif groups.get("month"):
        month = MONTHS[groups["month"].casefold()]
    else:
        month = None
    day = int(groups["day"]) if groups.get("day") else None
    period = _valid(year, month, day)
    return [period] if period is not None else []


def _valid(year: int | None, month: int | None, day: int | None) -> Period | None:
    if (month is not None and not 1 <= month <= 12) or (day is not None and not 1 <= day <= 31):
        return None
    if month is None and (year is None or day is not None):
        return None
    return Period(year=year, month=month, day=day)


def told_in(periods: Sequence[Named], first_at: float, last_at: float) -> bool:
    """Whether something told from `first_at` to `last_at` (epoch seconds, UTC) was told in one of
    the periods: its span meets a period from a day before it to TOLD_WITHIN_DAYS after it."""
    return bool(told_in_each(periods, np.array([[first_at, last_at]], dtype=np.float64), unknown=False)[0])


def told_in_each(periods: Sequence[Named], spans: np.ndarray, *, unknown: bool) -> np.ndarray:
    """`told_in` for each row of `spans` ((first, last) epoch seconds per row); a row with a NaN (its
    times not known) gets `unknown`. All False when there are no periods."""
    spans = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    out = np.zeros(len(spans), dtype=bool)
    if not periods or not len(spans):
        return out
    known = ~np.isnan(spans).any(axis=1)
    out[~known] = unknown
    if not known.any():
        return out
    first, last = spans[known].min(axis=1), spans[known].max(axis=1)
    years = range(_year(float(first.min())) - 1, _year(float(last.max())) + 1)
    # Each period as [its first day - 1, its last day + TOLD_WITHIN_DAYS + 1) in epoch seconds (UTC days).
    bounds = np.array(
        [
            (_midnight(start - timedelta(days=1)), _midnight(end + timedelta(days=TOLD_WITHIN_DAYS + 1)))
            for period in periods
            for start, end in period.spans(years)
        ],
        dtype=np.float64,
    ).reshape(-1, 2)
    meets = (first[:, None] < bounds[None, :, 1]) & (bounds[None, :, 0] <= last[:, None])
    out[known] = meets.any(axis=1)
    return out


def _year(epoch_seconds: float) -> int:
    return datetime.fromtimestamp(epoch_seconds, UTC).year


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
