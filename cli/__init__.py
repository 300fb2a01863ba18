"""torchmend command line (thin Typer front end over the codemods library)."""
