"""The reference conversion webhook as the tests run it (``reference``: a local process or a
container, one ``ConversionWebhook`` protocol), the images it is built into (``images``), and
the client certificates kube-apiserver presents to webhooks (``clients``)."""
