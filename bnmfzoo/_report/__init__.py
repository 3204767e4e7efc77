"""Parts of the HTML report (:mod:`bnmfzoo.report`): loadings per mode, the fit view."""
