"""Streamlit helpers shared by the pages (the only UI code outside views/)."""
