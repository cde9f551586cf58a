"""Layer 3: the .topo front end (parse, resolve, elaborate, verify, fmt, parallel blocks) and the
one pipeline that every caller runs."""
