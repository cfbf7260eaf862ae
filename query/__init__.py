"""The query layer (the lambda serving layer): plans a range, reads settled days from Mongo and
recent minutes from Redis, merges them, and reconciles the two layers. The API, the dashboard
and the Celery tasks are its clients."""
