"""streamdedup: near-duplicate detection for web crawls, batch or streaming.

The package mirrors the data flow of one page:
record -> clean -> tokens -> fingerprints -> store -> verdict -> outputs.
`streamdedup.detector.Detector` is the thin runtime that strings them together.
"""

__version__ = "0.2.0"
