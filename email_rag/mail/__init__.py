"""Reading mail: headers, MIME, addresses, attachments. Pure functions, no I/O."""
