"""End to end in headless Chromium: look, requeue FAILED tasks, watch them succeed, as staff.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them). Screenshots go
to a temporary directory, or to ``$THREADMILL_SCREENSHOT_DIR``: set it to ``docs/images`` to
refresh the figures of docs/admin.md.
"""

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_django.live_server_helper import LiveServer

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from testproject.example.tasks import add, fail, send_welcome
from tests.admin.conftest import staff_user
from tests.admin.tasks import flaky_report
from tests.support import ROOT, wait_until, worker

pytest.importorskip("selenium", reason="the 'test' extra brings selenium")
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

pytestmark = pytest.mark.browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def run_worker_burst(redis_url: str, key_prefix: str) -> None:
    """Run ``manage.py threadmill_worker --burst`` until the queues are empty."""
    command = worker(redis_url, key_prefix, "--burst")
    try:
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[webdriver.Chrome]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("install Debian's chromium and chromium-driver (.ci/run does)")
    # The queues page reloads itself every 5 s: a test that finds an element there and then
    # reads or clicks it would meet a page gone if the machine stalled between the two.
    monkeypatch.setattr("django_threadmill.admin.queues.REFRESH_S", 3600)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    # The live server answers each request on a thread of its own; let them end.
    wait_until(
        lambda: not any("process_request" in t.name for t in threading.enumerate()),
        "the live server's request threads ending",
        timeout_s=20,
    )


class AdminSession:
    """A browser logged in to the admin, with screenshots named after the docs' figures."""

    def __init__(self, driver: webdriver.Chrome, server: LiveServer, images: Path) -> None:
        self.driver, self.server, self.images = driver, server, images

    def log_in(self, username: str) -> None:
        self.driver.delete_all_cookies()
        self.open("/admin/login/")
        self.driver.find_element(By.NAME, "username").send_keys(username)
        self.driver.find_element(By.NAME, "password").send_keys("pw")
        self.click("input[type=submit]")
        wait_until(
            lambda: "/admin/login/" not in self.driver.current_url,
            f"{username} logging in",
            timeout_s=20,
        )

    def open(self, path: str) -> None:
        self.driver.get(f"{self.server.url}{path}")

    def click(self, selector: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, selector).click()

    def text(self, selector: str = "body") -> str:
        return self.driver.find_element(By.CSS_SELECTOR, selector).text

    def wait_for(self, selector: str) -> None:
        """Wait until the page shows ``selector``: a click returns before the page it opens
        has loaded."""
        wait_until(
            lambda: self.driver.find_elements(By.CSS_SELECTOR, selector),
            f"the page showing {selector}",
            timeout_s=20,
        )

    def text_once_shown(self, selector: str) -> str:
        """Return the text of ``selector`` once the page a click opened shows it."""
        self.wait_for(selector)
        return self.text(selector)

    def choose(self, selector: str, value: str) -> None:
        Select(self.driver.find_element(By.CSS_SELECTOR, selector)).select_by_value(value)

    def shot(self, name: str) -> None:
        self.images.mkdir(parents=True, exist_ok=True)
        assert self.driver.save_screenshot(str(self.images / f"admin-{name}.png"))


def test_staff_requeue_a_failed_task_and_a_viewer_cannot(
    browser: webdriver.Chrome,
    live_server: LiveServer,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    transactional_db: None,
    tmp_path: Path,
) -> None:
    staff_user("operator", "view_queue", "change_queue", "view_task", "change_task")
    staff_user("viewer", "view_queue", "view_task")
    task_id = flaky_report.enqueue("weekly").id
    for n in range(3):
        add.enqueue(n, n)
        send_welcome.enqueue(f"user{n}@example.com")
    fail.enqueue("<b>not bold</b>: stored text is escaped")
    run_worker_burst(redis_url, key_prefix)
    add.using(priority=10).enqueue(7, 7)  # left READY for the queues page
    images = Path(os.environ.get("THREADMILL_SCREENSHOT_DIR") or tmp_path)
    session = AdminSession(browser, live_server, ROOT / images)

    session.log_in("operator")
    session.open("/admin/django_threadmill/queue/")
    assert "Backend “default”" in session.text()
    session.shot("queues")
    session.open("/admin/django_threadmill/task/?status=failed")
    session.shot("tasks")
    session.click(f"a[href$='/default/{task_id}/']")
    browser.set_window_size(1400, 1500)
    assert "FAILED" in session.text_once_shown("td#tm-status")
    assert "ConnectionError" in session.text()
    assert "1 / 2 (50%) report 'weekly' built" in session.text("#tm-progress")
    session.shot("task-failed")
    browser.set_window_size(1400, 1000)
    session.click("#tm-requeue")
    session.wait_for("#tm-confirm")
    session.shot("requeue-confirm")
    session.click("#tm-confirm")
    assert "1 task requeued." in session.text_once_shown(".messagelist")
    assert "READY" in session.text("#tm-status")
    assert not browser.find_elements(By.ID, "tm-progress")  # the new attempt reported nothing

    run_worker_burst(redis_url, key_prefix)
    session.driver.refresh()
    browser.set_window_size(1400, 1300)
    assert "SUCCESSFUL" in session.text("#tm-status")
    assert "sent on attempt 2" in session.text()
    assert "2 / 2 (100%) sent" in session.text("#tm-progress")
    session.shot("task-successful")

    browser.set_window_size(1400, 1000)
    session.log_in("viewer")
    session.open(f"/admin/django_threadmill/task/default/{task_id}/")
    assert "SUCCESSFUL" in session.text("#tm-status")
    session.open("/admin/django_threadmill/task/?status=failed")
    assert not browser.find_elements(By.CSS_SELECTOR, "select[name=action], .action-select")
    session.click("a[href*='/default/'][href$='@default/']")
    assert "FAILED" in session.text_once_shown("td#tm-status")
    assert not browser.find_elements(By.CSS_SELECTOR, "#tm-requeue, #tm-cancel")
    session.shot("readonly-task")
    session.open("/admin/django_threadmill/task/")
    assert task_id in session.text()
    assert not browser.find_elements(By.CSS_SELECTOR, "select[name=action], .action-select")
    session.open("/admin/django_threadmill/queue/")
    assert not browser.find_elements(By.PARTIAL_LINK_TEXT, "Purge finished")
    session.driver.execute_script("localStorage.setItem('theme', 'dark')")
    session.driver.refresh()
    session.shot("queues-dark")


def test_the_list_shows_ready_work_and_a_bulk_requeue_fixes_a_filter(
    browser: webdriver.Chrome,
    live_server: LiveServer,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    transactional_db: None,
    tmp_path: Path,
) -> None:
    staff_user("operator", "view_queue", "change_queue", "view_task", "change_task")
    reports = [flaky_report.enqueue(f"region {n}").id for n in range(3)]
    for n in range(5):
        add.enqueue(n, n)
    fail.enqueue("a failure of another task, left alone")
    run_worker_burst(redis_url, key_prefix)
    waiting = add.enqueue(7, 7).id
    images = Path(os.environ.get("THREADMILL_SCREENSHOT_DIR") or tmp_path)
    session = AdminSession(browser, live_server, ROOT / images)
    session.log_in("operator")

    session.open("/admin/django_threadmill/task/")
    assert waiting in session.text("#result_list")  # no filter touched
    assert "READY" in session.text("#result_list")
    session.shot("tasks-all-states")

    session.choose("#tm-status", "failed")
    session.driver.find_element(By.ID, "tm-task").send_keys("flaky_report")
    session.click("#tm-filters input[type=submit]")
    wait_until(lambda: "status=failed" in browser.current_url, "the filter applying")
    assert all(task_id in session.text("#result_list") for task_id in reports)
    session.choose("#tm-action", "requeue")
    session.click("#tm-across")
    assert "3 tasks" in session.text_once_shown("#tm-bulk-summary")
    session.shot("bulk-confirm")
    session.click("#tm-confirm")
    assert "3 tasks requeued." in session.text_once_shown(".messagelist")

    run_worker_burst(redis_url, key_prefix)
    session.open("/admin/django_threadmill/task/?status=successful&task=flaky_report")
    listed = session.text("#result_list")
    assert all(task_id in listed for task_id in reports)
    assert [backend.get_result(task_id).status.name for task_id in reports] == ["SUCCESSFUL"] * 3

    session.open("/admin/django_threadmill/queue/")
    # One read of the whole page: it reloads itself every few seconds, which would make
    # elements found one by one stale.
    charts = browser.execute_script(
        "const c = document.querySelector('#tm-chart-default svg.tm-chart');"
        "return [c.querySelectorAll('rect.tm-ok').length, c.querySelectorAll('rect.tm-failed')"
        ".length, document.querySelector('.tm-paths').textContent];"
    )
    assert charts[0] >= 1
    assert charts[1] >= 1
    assert "tests.admin.tasks.flaky_report" in charts[2]
    session.shot("activity")


def test_staff_pause_a_queue_and_resume_it(
    browser: webdriver.Chrome,
    live_server: LiveServer,
    backend: ThreadmillTaskBackend,
    transactional_db: None,
    tmp_path: Path,
) -> None:
    staff_user("operator", "view_queue", "change_queue", "view_task", "change_task")
    add.enqueue(1, 2)
    images = Path(os.environ.get("THREADMILL_SCREENSHOT_DIR") or tmp_path)
    session = AdminSession(browser, live_server, ROOT / images)
    session.log_in("operator")

    session.open("/admin/django_threadmill/queue/")
    session.click("form[action$='/default/default/pause/'] input[type=submit]")
    assert "It holds 1 READY task" in session.text_once_shown("#tm-pause-state")
    session.driver.find_element(By.ID, "tm-pause-reason").send_keys("provider down")
    session.shot("pause-confirm")
    session.click("#tm-confirm")
    assert "Paused default / default" in session.text_once_shown(".messagelist")
    pause = Inspector(backend.broker).paused(["default"])["default"]
    assert (pause.by, pause.reason) == ("operator in the admin", "provider down")
    assert "PAUSED" in session.text("#backend-default .tm-paused")
    session.shot("queue-paused")

    session.click("form[action$='/default/default/resume/'] input[type=submit]")
    assert "by operator in the admin: provider down" in session.text_once_shown("#tm-pause-state")
    session.click("#tm-confirm")
    assert "Resumed default / default" in session.text_once_shown(".messagelist")
    assert Inspector(backend.broker).paused(["default"]) == {}
    assert not browser.find_elements(By.CSS_SELECTOR, "#backend-default .tm-paused")
