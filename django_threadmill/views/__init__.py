"""The admin's Threadmill pages: queues, the task list, task detail and actions."""
