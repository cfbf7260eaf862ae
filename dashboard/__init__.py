"""The plotly-Dash dashboard: live traffic, history and pipeline health."""
