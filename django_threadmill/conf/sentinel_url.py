"""Say what to write instead of a Sentinel URL of another library in LOCATION.

Celery takes ``sentinel://host:26379;sentinel://host2:26379``, redis-sentinel-url and others
``redis+sentinel://host:26379,host2:26379/mymaster/0``, Lettuce ``redis-sentinel://host#mymaster``.
This backend takes the sentinels in ``OPTIONS['sentinel']`` and the primary's credentials and
database in LOCATION (docs/scaling.md, Sentinel): the settings are read from such a URL where it
gives them, so the error names them as they are to be written.
"""

import re
from urllib.parse import parse_qs, urlsplit

from .topology import masked_location

SENTINEL_PORT = 26379  # the sentinels' default port, as the libraries read a host without one
# Where a URL of several (Celery's, joined by ';') starts the next: a ';' before a scheme.
NEXT_URL = re.compile(r";(?=[A-Za-z][A-Za-z0-9+.-]*://)")
# The query arguments other libraries name the service by (Lettuce: sentinelMasterId).
SERVICE_ARGUMENTS = ("service_name", "master_name", "sentinelMasterId")
UNKNOWN_SERVICE = "<the name the sentinels monitor: Celery's master_name>"
EXAMPLE = (
    "e.g. 'LOCATION': 'redis://sentinel-managed/0' and OPTIONS['sentinel'] = {'service_name': "
    "'mymaster', 'sentinels': [('10.0.0.1', 26379)]}"
)


def sentinel_url(location: str) -> bool:
    """Tell whether ``location`` is a Sentinel URL: its scheme names Sentinel."""
    scheme, found, _ = location.partition("://")
    return bool(found) and "sentinel" in scheme.lower()


def sentinel_url_refusal(where: str, location: str) -> str:
    """Return the error for ``location``, a Sentinel URL at ``where``: the settings to write
    instead, its passwords masked (each URL's, of several)."""
    urls = NEXT_URL.split(location)
    shown = ";".join(masked_location(url) for url in urls)
    return (
        f"{where} is {shown!r}, a Sentinel URL, which this backend does not read: it takes the "
        "sentinels and the service in OPTIONS['sentinel'], and the primary's user, password "
        f"and database in LOCATION, whose host is not used. Write {_settings_of(urls)}, with "
        "the sentinels' own user and password, if they need AUTH, as its 'username' and "
        "'password'."
    )


def _settings_of(urls: list[str]) -> str:
    """Return the LOCATION and OPTIONS['sentinel'] that ``urls`` give, or an example where a
    sentinel's address cannot be read from them."""
    try:
        sentinels = [address for url in urls for address in _addresses(url)]
    except ValueError:  # a port that is no number, or past 65535
        return EXAMPLE
    first = urlsplit(urls[0])
    segments = [segment for segment in first.path.split("/") if segment]
    databases = [segment for segment in segments if segment.isdigit()]
    names = [segment for segment in segments if not segment.isdigit()]
    query = parse_qs(first.query)
    names += [first.fragment, *(query[name][0] for name in SERVICE_ARGUMENTS if name in query)]
    service = next((repr(name) for name in names if name), UNKNOWN_SERVICE)
    scheme = "rediss" if first.scheme.lower().startswith("rediss") else "redis"
    userinfo = first.netloc.rpartition("@")[0].partition(",")[0]
    primary = masked_location(f"{scheme}://{userinfo}{'@' if userinfo else ''}sentinel-managed")
    location = f"{primary}/{databases[0] if databases else 0}"
    return (
        f"'LOCATION': {location!r} and OPTIONS['sentinel'] = {{'service_name': {service}, "
        f"'sentinels': {sentinels!r}}}"
    )


def _addresses(url: str) -> list[tuple[str, int]]:
    """Return the sentinels' addresses ``url`` lists (``host:port,host2:port2``)."""
    hosts = urlsplit(url).netloc.rpartition("@")[2]
    found: list[tuple[str, int]] = []
    for host in hosts.split(","):
        parts = urlsplit(f"//{host}")
        if not parts.hostname:
            raise ValueError(host)
        found.append((parts.hostname, parts.port or SENTINEL_PORT))
    return found
