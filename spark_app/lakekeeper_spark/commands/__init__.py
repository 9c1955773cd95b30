"""One module per engine command."""
