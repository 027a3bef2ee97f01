"""URLs of the app outside the admin: ``path("threadmill/", include("django_threadmill.urls"))``."""

from django.urls import path

from .views import metrics_view

app_name = "django_threadmill"
urlpatterns = [path("metrics", metrics_view, name="metrics")]
