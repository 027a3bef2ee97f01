"""The "Threadmill" admin section: queues, the task list, task detail and actions.

No table holds task data. Two unmanaged placeholder models give the section, its links and
the view/change permissions; their admins replace every URL with pages that read Redis.
``admin_view`` only checks ``is_staff``, so every page checks its permission itself.
"""

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from ..aliases import source_of, sources, threadmill_aliases, threadmill_backend
from ..broker.inspect.source import Source
from ..codec.text import printable
from ..exceptions import BrokerUnavailable, ImproperlyConfiguredThreadmill
from ..models import Queue, Task
from ..wording import shown
from . import actions, audit, bulk
from .detail import (
    TooBigToShow,
    detail_context,
    detail_or_404,
    raw_fields,
    raw_response,
    raw_value,
)
from .queues import pause_confirmation, pause_or_resume, queues_context, reason_error
from .results import UnknownFilter, results_context
from .workflows import workflow_context, workflows_context

type View = Callable[..., HttpResponseBase]


class PrintablePage(TemplateResponse):
    """A page whose text may hold a lone surrogate a task stored (an argument made from a file
    name that is not UTF-8, say): shown as its escape, where encoding it failed with a 500."""

    @property
    def rendered_content(self) -> str:
        return printable(super().rendered_content)


def source_or_404(alias: str) -> Source:
    """Return the Source of ``alias``, or 404 if it is not a ThreadmillTaskBackend alias."""
    if alias not in threadmill_aliases():
        raise Http404(f"No ThreadmillTaskBackend alias {shown(alias)} in TASKS.")
    return source_of(threadmill_backend(alias))


def queue_source_or_404(alias: str, queue: str) -> Source:
    """Return the Source of ``alias``, or 404 if it has no queue ``queue`` (the rule
    ``manage.py threadmill_queue`` applies: in QUEUES, or one Redis knows)."""
    source = source_or_404(alias)
    try:
        source.known_queue(queue)
    except ImproperlyConfiguredThreadmill as exc:
        raise Http404(str(exc)) from exc
    return source


class ThreadmillModelAdmin(admin.ModelAdmin):
    """Shared plumbing: permission-checked pages rendered inside the admin's layout."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def url_name(self, suffix: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{suffix}"

    def guarded(self, view: View, *, change: bool = False) -> View:
        """Wrap ``view`` in admin_view, require the view (or change) permission, show outages
        and what was not found."""

        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            allowed = (
                self.has_change_permission(request) if change else self.has_view_permission(request)
            )
            if not allowed:
                raise PermissionDenied
            try:
                return view(request, *args, **kwargs)
            except BrokerUnavailable as exc:
                return self.render(
                    request, "unavailable.html", "Redis is unavailable", {"error": str(exc)}, 503
                )
            except Http404 as exc:
                # Django's own 404 page drops the message unless DEBUG is on: an operator
                # following a link to a result that expired meanwhile read a bare "Not Found".
                return self.render(
                    request, "unavailable.html", "Not found", {"error": str(exc)}, 404
                )

        return self.admin_site.admin_view(update_wrapper(inner, view))

    def render(
        self,
        request: HttpRequest,
        template: str,
        title: str,
        context: dict[str, Any],
        status: int = 200,
    ) -> TemplateResponse:
        full = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": title,
            "can_change": self.has_change_permission(request),
            **context,
        }
        return PrintablePage(request, f"admin/django_threadmill/{template}", full, status=status)


@admin.register(Queue)
class QueueAdmin(ThreadmillModelAdmin):
    def get_urls(self) -> list[URLPattern]:
        return [
            path("", self.guarded(self.queues_view), name=self.url_name("changelist")),
            path(
                "<path:alias>/<str:queue>/purge/",
                self.guarded(self.purge_view, change=True),
                name=self.url_name("purge"),
            ),
            path(
                "<path:alias>/<str:queue>/pause/",
                self.guarded(require_POST(self.pause_view), change=True),
                {"resume": False},
                name=self.url_name("pause"),
            ),
            path(
                "<path:alias>/<str:queue>/resume/",
                self.guarded(require_POST(self.pause_view), change=True),
                {"resume": True},
                name=self.url_name("resume"),
            ),
        ]

    def queues_view(self, request: HttpRequest) -> HttpResponse:
        context = {**queues_context(), "can_view_tasks": self.may_view_tasks(request)}
        return self.render(request, "queues.html", "Queues", context)

    def may_view_tasks(self, request: HttpRequest) -> bool:
        """Whether ``request``'s user may open the task pages, which the queues page links
        only for them, as Django's admin links a related object only for who may view it."""
        return self.admin_site.get_model_admin(Task).has_view_permission(request)

    def purge_view(self, request: HttpRequest, alias: str, queue: str) -> HttpResponse:
        source = queue_source_or_404(alias, queue)
        state = request.POST.get("state", request.GET.get("state", ""))
        confirmed = request.method == "POST" and request.POST.get("post") == "yes"
        if confirmed and state not in actions.PURGE_STATES:  # hand-made: refused, not widened
            self.message_user(request, actions.unknown_purge_state(state), messages.ERROR)
            return HttpResponseRedirect(request.path)
        if state not in actions.PURGE_STATES:
            state = ""  # a link's choice the form does not offer: it opens on both
        if confirmed:
            purged = actions.purge(source, queue, state)
            audit.record(
                request.user,
                "purge",
                alias,
                queue=queue,
                state=state or "finished",
                deleted=purged.deleted,
                **({"incomplete": "yes"} if purged.stopped is not None else {}),
            )
            done = f"Purged {purged.deleted} finished results ({actions.PURGE_STATES[state][0]})"
            if purged.stopped is None:
                self.message_user(request, f"{done} from {alias} / {queue}.", messages.SUCCESS)
            else:
                self.message_user(
                    request,
                    f"{done} from {alias} / {queue}, then stopped: {purged.stopped} Those left "
                    "are kept: purge again once Redis answers.",
                    messages.ERROR,
                )
            return HttpResponseRedirect(reverse(f"admin:{self.url_name('changelist')}"))
        context = {
            "alias": alias,
            "queue": queue,
            "state": state,
            "states": [(value, label) for value, (label, _) in actions.PURGE_STATES.items()],
            **actions.purge_preview(source, queue),
        }
        return self.render(request, "purge_confirm.html", "Purge finished results", context)

    def pause_view(
        self, request: HttpRequest, alias: str, queue: str, *, resume: bool
    ) -> HttpResponse:
        """Confirm pausing (or resuming) a queue, then (on ``post=yes``) do it; a reason the
        command would refuse is shown on the form again with the error, nothing paused."""
        source = queue_source_or_404(alias, queue)
        reason = request.POST.get("reason", "").strip()  # as Django's form fields trim
        error = "" if resume else reason_error(reason)
        if request.POST.get("post") != "yes" or error:
            context = pause_confirmation(source, queue, resume=resume, reason=reason, error=error)
            title = "Resume a queue" if resume else "Pause a queue"
            return self.render(request, "pause_confirm.html", title, context)
        text, level = pause_or_resume(source, queue, request.user, resume=resume, reason=reason)
        self.message_user(request, text, level)
        return HttpResponseRedirect(reverse(f"admin:{self.url_name('changelist')}"))


@admin.register(Task)
class TaskAdmin(ThreadmillModelAdmin):
    def get_urls(self) -> list[URLPattern]:
        return [
            path("", self.guarded(self.list_view), name=self.url_name("changelist")),
            path(
                "action/",
                self.guarded(require_POST(self.action_view), change=True),
                name=self.url_name("action"),
            ),
            path("workflows/", self.guarded(self.workflows_view), name=self.url_name("workflows")),
            path(
                "workflows/<path:alias>/<str:workflow_id>/",
                self.guarded(self.workflow_view),
                name=self.url_name("workflow"),
            ),
            # Before the detail page: its alias would take in ".../<task_id>/raw".
            path(
                "<path:alias>/<str:task_id>/raw/<str:field>/",
                self.guarded(self.raw_view),
                name=self.url_name("raw"),
            ),
            path(
                "<path:alias>/<str:task_id>/",
                self.guarded(self.detail_view),
                name=self.url_name("detail"),
            ),
        ]

    def list_view(self, request: HttpRequest) -> HttpResponse:
        context = {
            **results_context(request.GET),
            "actions": list(actions.TASK_ACTIONS.values()),
            "selection_separator": actions.SELECTION_SEPARATOR,
        }
        return self.render(request, "results.html", "Tasks", context)

    def detail_view(self, request: HttpRequest, alias: str, task_id: str) -> HttpResponse:
        source = source_or_404(alias)
        context = detail_context(source, detail_or_404(source, task_id))
        return self.render(request, "detail.html", f"Task {task_id}", context)

    def workflows_view(self, request: HttpRequest) -> HttpResponse:
        return self.render(request, "workflows.html", "Workflows", workflows_context(sources()))

    def workflow_view(self, request: HttpRequest, alias: str, workflow_id: str) -> HttpResponse:
        context = workflow_context(source_or_404(alias), workflow_id, request.GET.get("page"))
        return self.render(request, "workflow.html", f"Workflow {workflow_id}", context)

    def raw_view(
        self, request: HttpRequest, alias: str, task_id: str, field: str
    ) -> HttpResponse | StreamingHttpResponse:
        source = source_or_404(alias)
        detail = detail_or_404(source, task_id, whole=raw_fields(field))
        try:
            return raw_response(raw_value(detail, field))
        except TooBigToShow as exc:  # not read: the task's page says where to read it
            self.message_user(request, str(exc), messages.ERROR)
            url = reverse(f"admin:{self.url_name('detail')}", args=[alias, task_id])
            return HttpResponseRedirect(url)

    def action_view(self, request: HttpRequest) -> HttpResponse:
        """Confirm an action on the posted tasks, then (on ``post=yes``) apply it."""
        back = self._next_url(request)
        action = actions.TASK_ACTIONS.get(request.POST.get("action", ""))
        if action is not None and request.POST.get("across") == "1":
            return self.bulk_action(request, action, back)
        values = request.POST.getlist("_selected_action")
        if action is not None and len(values) > actions.MAX_SELECTION:  # hand-made: refused
            self.message_user(
                request, actions.too_many_selected(action, len(values)), messages.ERROR
            )
            return HttpResponseRedirect(back)
        by_alias = {source.alias: source for source in sources()}
        pairs = actions.parse_selection(values, by_alias)
        if action is None or not pairs:
            self.message_user(
                request,
                "Choose an action and select at least one task first.",
                messages.WARNING,
            )
            return HttpResponseRedirect(back)
        selected = actions.current_states(pairs, by_alias)
        if request.POST.get("post") != "yes":
            context = {"action": action, "selected": selected, "next": back}
            return self.render(request, "action_confirm.html", action.label, context)
        # One task (its detail page's button, or one ticked row) is named; more are counted.
        backend = ",".join(sorted({item.alias for item in selected}))
        applied_to: dict[str, str | int] = (
            {"task": selected[0].named} if len(selected) == 1 else {"selected": len(selected)}
        )
        return self._apply(request, action, selected, back, backend, applied_to)

    def bulk_action(
        self, request: HttpRequest, action: actions.TaskAction, back: str
    ) -> HttpResponse:
        """Confirm ``action`` on every task the posted filter matches, then (``post=yes``)
        walk the filter again and apply it."""
        try:
            found = bulk.matched(request.POST, action)
        except UnknownFilter as exc:  # hand-made: refused, not widened to every backend
            self.message_user(request, f"Nothing was {action.done}: {exc}", messages.ERROR)
            return HttpResponseRedirect(back)
        if request.POST.get("post") != "yes":
            context = {
                "action": action,
                "found": found,
                "next": back,
                "limit": bulk.MAX_BULK,
                "budget": bulk.BULK_SCAN_BUDGET,
            }
            every = f"every {action.applies_to_label} task a filter matches"
            title = f"{action.name.capitalize()} {every}"
            return self.render(request, "bulk_confirm.html", title, context)
        backend = found.filters.get("backend") or ",".join(threadmill_aliases())
        # The filter as the list's query string, cut short; "all" when nothing was chosen.
        applied_to: dict[str, str | int] = {"filter": found.logged or "all"}
        return self._apply(request, action, found.selected, back, backend, applied_to)

    def _apply(
        self,
        request: HttpRequest,
        action: actions.TaskAction,
        selected: list[actions.Selected],
        back: str,
        backend: str,
        applied_to: dict[str, str | int],
    ) -> HttpResponse:
        """Run ``action`` on ``selected`` (fenced per task), log it with ``applied_to`` (what
        was chosen, in ``backend``) and say what it did."""
        by_alias = {source.alias: source for source in sources()}
        outcome = actions.run_task_action(action, selected, by_alias, request.user)
        # Stopped by Redis: the tasks it did not settle, as the command's purge says it stopped.
        stopped: dict[str, str | int] = (
            {"unsettled": len(outcome.unsettled), "incomplete": "yes"}
            if outcome.interrupted is not None
            else {}
        )
        audit.record(
            request.user,
            action.name,
            backend,
            **applied_to,
            changed=outcome.changed,
            left_alone=outcome.left_alone,
            **stopped,
        )
        count, *left_alone = actions.outcome_messages(action, outcome)
        self.message_user(request, count, messages.SUCCESS if outcome.changed else messages.WARNING)
        for text in left_alone:
            self.message_user(request, text, messages.WARNING)
        if outcome.interrupted is not None:
            self.message_user(request, actions.stopped_message(action, outcome), messages.ERROR)
        return HttpResponseRedirect(back)

    def _next_url(self, request: HttpRequest) -> str:
        wanted = request.POST.get("next", "")
        if wanted and url_has_allowed_host_and_scheme(
            wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return wanted
        return reverse(f"admin:{self.url_name('changelist')}")
