"""The NFAT bytes: the construct layout that is the format's one truth (`layout`), the decoded
records (`model`), the record codec (`codec`), the structural pass over the header and tables
(`structure`), and the words device profiles and requirements share (`vocabulary`).

May use: fatpte.fileio, fatpte.errors, fatpte._generated.
"""
