# The dashboard on port 8501 (after Streamlit's own deployment guide).
#   docker build -t audit .                        CPU-only torch (the default: no multi-GB CUDA build)
#   docker build --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu126 -t audit .   CUDA torch
#   docker run -p 127.0.0.1:8501:8501 -e AUDIT_HOST=0.0.0.0 audit
# The server listens on 127.0.0.1 unless AUDIT_HOST says otherwise: inside a container that means
# nothing outside it can connect, so `docker run -p` needs `-e AUDIT_HOST=0.0.0.0` (README, "Docker").
FROM python:3.11-slim

# Where torch==<requirements.txt's pin> comes from; the CPU wheels by default.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    AUDIT_HOST=127.0.0.1

# curl for the health check, libgomp1 for torch and scikit-learn, Chromium for the PDF reports.
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl libgomp1 chromium fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 auditor
WORKDIR /app

COPY requirements.txt .
# torch first, from TORCH_INDEX, at the version requirements.txt pins; then requirements.txt itself
# (its torch pin is then already satisfied, so nothing is fetched from the default index for it).
RUN pip install --index-url "$TORCH_INDEX" "$(grep -E '^torch==' requirements.txt)"
RUN pip install -r requirements.txt

COPY --chown=auditor:auditor . .
USER auditor

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD curl --fail http://127.0.0.1:8501/_stcore/health || exit 1

# (sh only to read AUDIT_HOST; `exec` leaves streamlit as PID 1; extra `docker run` arguments go to streamlit)
ENTRYPOINT ["sh", "-c", "exec streamlit run app.py --server.port=8501 --server.address=\"$AUDIT_HOST\" \"$@\"", "streamlit"]
