"""The version of topoc, kept at the bottom layer so that any layer (the plan cache's
fingerprint, SARIF output, the language server) can name it without importing the package
front."""

VERSION = "0.1.0"
