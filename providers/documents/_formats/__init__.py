"""Readers of document formats that are not plain text: one small module per family.

Each reader takes a file's bytes (or decoded text) and returns an :class:`~._common.Extracted`
(a title, Markdown-like text whose ``#`` headings give the sections and whose pipe tables keep a
header row, and notes), or raises :class:`~._common.FormatSkip` with the reason the file cannot be
read. :func:`~._registry.read_format` is the one entry point the loaders call.

| family | module | library | kinds |
|---|---|---|---|
| Word processing | ``_office`` | python-docx | ``docx`` |
| Slides | ``_office`` | python-pptx | ``pptx`` |
| Spreadsheets | ``_sheets`` | openpyxl (xlsx), lxml (ods), stdlib csv | ``spreadsheet`` |
| OpenDocument text | ``_odf`` | lxml | ``odt`` |
| E-books | ``_epub`` | zipfile + lxml | ``epub`` |
| E-mail | ``_mail`` | stdlib email | ``email`` |
| Notebooks | ``_notebook`` | stdlib json | ``notebook`` |
| Markup | ``_markup`` | (none) | ``rst``, ``asciidoc`` |
| PDF | ``_pdf`` | pdfplumber | ``pdf`` |
"""
