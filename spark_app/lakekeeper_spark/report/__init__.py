"""What a run reports, and the plain data everything passes around: the
lowest layer, imported by every other package.

- ``errors``   error types and the text of (Java) exceptions
- ``model``    plain data: listings, table facts, units, plans
- ``results``  the JSON result of a table and of its units
- ``history``  the run history records on the table's filesystem
- ``progress`` the progress records a long run appends
- ``handoff``  compact's analysis handed to its launcher and the go it waits for (one
               application a maintenance window)
- ``sizes``    byte counts as text (``human_bytes``) and file-size histograms
"""
