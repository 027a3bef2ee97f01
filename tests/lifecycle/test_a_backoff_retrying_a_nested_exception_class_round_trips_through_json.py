"""``ExponentialBackoff.to_dict()`` / ``from_dict()`` round-trip a ``retry_on`` class that lives
inside another class: ``Model.DoesNotExist``, the usual one to retry (a task that ran before the
transaction that made its row committed), or a client's ``Session.Error``.

``to_dict`` wrote its path as ``<module>.<qualname>`` (``django.contrib.auth.models.User.
DoesNotExist``), and ``from_dict`` read that back with ``import_string``, which imports all but
the last part as a module: it raised ``ModuleNotFoundError: No module named
'django.contrib.auth.models.User'``, so the JSON form of such a policy never loaded
(docs/lifecycle.md, Retries). A class ``to_dict`` cannot name (defined inside a function) is
refused there, naming the fix, instead of writing a path no ``from_dict`` can read.
"""

import json

import pytest
from django.contrib.auth.models import User

from django_threadmill.retry import ExponentialBackoff


class Client:
    """Stands for a library client whose errors are nested in it."""

    class Error(Exception):
        """An error class nested in its client."""


def test_a_models_does_not_exist_round_trips() -> None:
    policy = ExponentialBackoff(retry_on=(User.DoesNotExist, Client.Error, ConnectionError))
    data = json.loads(json.dumps(policy.to_dict()))
    assert data["retry_on"] == [
        "django.contrib.auth.models.User.DoesNotExist",
        f"{__name__}.Client.Error",
        "builtins.ConnectionError",
    ]
    assert ExponentialBackoff.from_dict(data) == policy


def test_a_path_that_names_nothing_is_refused_naming_it() -> None:
    data = ExponentialBackoff().to_dict() | {
        "retry_on": ["django.contrib.auth.models.User.NoSuchError"]
    }
    with pytest.raises(ImportError, match=r"'django\.contrib\.auth\.models\.User\.NoSuchError'"):
        ExponentialBackoff.from_dict(data)


def test_a_class_defined_in_a_function_is_refused_by_to_dict() -> None:
    class Local(Exception):
        pass

    policy = ExponentialBackoff(retry_on=(Local,))
    with pytest.raises(ValueError, match=r"defined inside a function.*module level"):
        policy.to_dict()
