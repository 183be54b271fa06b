"""The user's conversion webhook, run for the gate: a command, an image or a URL
(``user_webhook``) behind the recording ``proxy``; on kind, the image behind a Service
(``kind_webhook``)."""
