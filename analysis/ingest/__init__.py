"""Capture ingest: pcap/pcapng -> per-packet table (columns in ``analysis.ingest.schema``)."""
from analysis.ingest.dpkt_reader import parse_tcp_options, read_pcap

__all__ = ["read_pcap", "parse_tcp_options"]
