"""One module per engine command, each its own flow over the layers below
(no command imports another; shared code lives below the commands):
``analyze``, ``compact``, ``rollback``, ``cleanup``, ``recover``. The entry
point (``cli``) runs one of them for each table."""
