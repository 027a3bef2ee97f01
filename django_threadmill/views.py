"""The Prometheus scrape endpoint: staff who may see the admin's queues page, or a bearer token
from OPTIONS, nothing else."""

import hmac

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .aliases import sources
from .broker.inspect.source import Source
from .exceptions import BrokerUnavailable

BEARER = "bearer"
# The metrics are the admin's queues page as numbers: who may read one may read the other, as
# ModelAdmin.has_view_permission decides (the change permission implies the view one).
QUEUES_PERMISSIONS = ("django_threadmill.view_queue", "django_threadmill.change_queue")


def readable_sources(request: HttpRequest) -> list[Source] | None:
    """Return the backends ``request`` may read the metrics of; None if it gave no credentials.

    A bearer token opens the aliases whose ``OPTIONS["metrics_token"]`` it matches; without
    one, an active staff user who may see the admin's queues page reads every alias: staff
    status alone is no permission, as in the admin. A project without Django's
    AuthenticationMiddleware (a scrape-only deployment) has no user: a token is then the way.
    """
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == BEARER:  # HTTP's auth schemes are case-insensitive
        offered = credentials.strip().encode()
        return [
            source
            for source in sources()
            if (token := source.settings.metrics_token)
            and hmac.compare_digest(offered, token.encode())
        ]
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    may_see_queues = any(user.has_perm(permission) for permission in QUEUES_PERMISSIONS)
    return sources() if user.is_active and user.is_staff and may_see_queues else []


# It checks its own credentials: LoginRequiredMiddleware sent a scraper's bearer token, and
# anyone without credentials, to the login page, where this answers 401.
@login_not_required
@require_safe  # HEAD too: every HTTP server must take it where it takes GET
@never_cache  # a scrape reads Redis now: a cache (the site-wide one) would freeze the gauges
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Serve the metrics of the readable backends in the Prometheus text format."""
    readable = readable_sources(request)
    if readable is None:
        response = HttpResponse("Log in as staff or send a bearer token.", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="threadmill"'
        return response
    if not readable:
        return HttpResponse(
            "These credentials may not read the metrics. Log in as staff with the "
            "django_threadmill.view_queue permission, or send an alias's metrics_token as a "
            "bearer token.",
            status=403,
        )
    try:
        from prometheus_client import CONTENT_TYPE_LATEST

        from .observability.prometheus import exposition
    except ImportError as exc:
        raise ImproperlyConfigured(
            "threadmill/metrics needs prometheus_client: pip install 'django-threadmill[metrics]'."
        ) from exc
    try:
        body = exposition(readable)
    except BrokerUnavailable as exc:  # a scrape failing with 503 is what an alert rule expects
        return HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
