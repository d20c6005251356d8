"""What a command does between parsing its options and rendering its answer.

The CLI commands in :mod:`oracle.cli` parse, call a function here and render; the
functions here load files, call :mod:`oracle.compute` and build the files a command
writes, without click."""
